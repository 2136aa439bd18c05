/**
 * Passive health of one pod, as the outlier detector (pick/outlier-detector.ts) leaves it and the
 * picker reads it. Plain fields: read on every pick without a call.
 */
export class PodHealth {
  /** Connect failures, timeouts and resets in a row since the last answer that was not a 5xx failure. */
  consecutiveFailures = 0;
  /** 5xx answers that count (pick/outlier-detector.ts countsAs5xx) in a row since the last other answer. */
  consecutive5xx = 0;
  /** Ejections in a row without an answer in between (each one doubles the next interval). */
  ejections = 0;
  /** Clock ms until which the pod is out of rotation; 0 = in rotation. */
  ejectedUntil = 0;
  /**
   * Clock ms of the last ejection (as this process learned of it): an answer to a request sent
   * then or before does not end it (pick/outlier-detector.ts success).
   */
  ejectedAt = 0;
  /**
   * Clock ms at which the primary made the latest of its ejections of the pod that this worker
   * applied: that ejection's identity (pick/pod-health-share.ts). 0: none.
   */
  sharedEjectedAt = 0;
  /** An answer (not a 5xx failure) since the last report to the primary (pick/pod-health-share.ts). */
  reportSuccess = false;
  /** Clock ms at which the latest-sent of those answers' requests went out (0: none). */
  reportSentAt = 0;
  /** Connect failures, timeouts and resets since the last report to the primary, after the last answer. */
  reportFailures = 0;
  /** 5xx failures since the last report to the primary, after the last answer. */
  report5xx = 0;
}

/**
 * What the access log hands its whole-record batches to: an output descriptor (FdWriter,
 * access-log-fd-writer.ts) or a stream of the process's own to the journal (JournalStreamWriter,
 * access-log-journal.ts).
 */
export interface BatchWriter {
  /** Queues one batch; false (nothing queued) when it would exceed the bound or after close. */
  push(batch: Buffer, records: number): boolean;
  /** Resolves once every batch queued so far is written (or failed and was reported). */
  flush(): Promise<void>;
  /** Opens a file output again (log rotation); a no-op for other outputs. */
  reopen(): void;
  /** Flushes, then closes what the writer opened. */
  close(): Promise<void>;
  /** Records pushed and not yet written whole (or failed). */
  readonly queuedRecords: number;
}

/**
 * Scans a Responses API (`/v1/responses`) stream as it passes through the router: the
 * SseUsageScanner's reading (events that can hold no usage are held unparsed, and read only when
 * the stream ends without its count), with the Responses shapes (openai-responses-usage.ts): the
 * text of `response.output_text.delta` events, and the usage of the stream's last event
 * (`response.completed`, `response.incomplete`, `response.failed`). Such a stream ends with its
 * usage without being asked, and the router adds nothing to it: nothing is stripped (keep mode,
 * `push` returns the chunk it was given). The pod's own error events are its `error` events and
 * `response.failed` (openai-error-event.ts), and an SSE field named `error` as in any stream; a
 * chat-shaped `error` member is not looked for in its last event.
 */
import type { GeneratedText } from './inference-api.js';
import type { StreamEvent } from './openai-event-usage.js';
import { opensWithResponsesError, responsesErrorEventMessage } from './openai-error-event.js';
import { applyResponsesEvent, responsesEventReportsCompletion, type ResponsesEvent } from './openai-responses-usage.js';
import { SseUsageScanner } from './openai-sse-usage.js';

const KEEP = { stripUsageChunk: false };

export class ResponsesSseScanner extends SseUsageScanner {
  constructor(generated: GeneratedText | null = null, tokensPerEvent: number | null = null, maxEventBytes?: number) {
    super(maxEventBytes === undefined ? KEEP : { stripUsageChunk: false, maxEventBytes }, generated, tokensPerEvent);
  }

  protected override opensWithError(data: string): boolean {
    return opensWithResponsesError(data);
  }

  protected override errorMessage(data: string): string | null {
    return responsesErrorEventMessage(data);
  }

  protected override lastEventError(): string | null {
    return null;
  }

  protected override reportsCompletion(event: StreamEvent): boolean {
    return responsesEventReportsCompletion(event as ResponsesEvent);
  }

  protected override applyEvent(event: StreamEvent, text: GeneratedText | null): boolean {
    return applyResponsesEvent(event as ResponsesEvent, this.seen, text);
  }
}

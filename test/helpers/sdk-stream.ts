/**
 * Reads an openai SDK chat stream to its end as an application does (`for await`): the text of
 * its deltas, and what the SDK raised while reading it (null when nothing).
 */
export async function readChatStream(stream: AsyncIterable<{ choices: { delta: { content?: string | null } }[] }>): Promise<{ text: string; err: unknown }> {
  let text = '';
  let err: unknown = null;
  try {
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
  } catch (e) {
    err = e;
  }
  return { text, err };
}

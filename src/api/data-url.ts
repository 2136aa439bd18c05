/** The payload of a `data:` URL, as the media estimators read it. */

/** Where the base64 payload of a `data:…;base64,` URL starts; -1 for any other URL. */
export function base64DataStart(url: string): number {
  if (!url.startsWith('data:')) return -1;
  const comma = url.indexOf(',', 5);
  return comma > 0 && url.startsWith(';base64', comma - 7) ? comma + 1 : -1;
}

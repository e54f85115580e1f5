/**
 * The headers of a page of a REST list: `Link: <…?cursor=…>; rel="next"` when there is a next
 * page, the request's own query kept.
 */
export function pageHeaders(url: URL, nextCursor: string | null): Record<string, string> {
  if (!nextCursor) return {};
  const next = new URL(url);
  next.searchParams.set('cursor', nextCursor);
  return { link: `<${next.pathname}${next.search}>; rel="next"` };
}

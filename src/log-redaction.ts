/** Query parameters whose values are secrets; compared case-insensitively, after decoding. */
const SECRET_PARAMETERS = new Set(['accesstoken', 'appsecret', 'sec', 'secret', 'value', 'adminkey', 'token']);

function decodedName(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' ')).trim().toLowerCase();
  } catch {
    return raw.toLowerCase();
  }
}

/** A resumable upload's URL is the capability for it, like a presigned URL. */
const RESUMABLE_UPLOAD_ID = /^(\/api\/resumableupload\/)[^/?]+/i;

/** The URL as it may be logged: the values of secret query parameters and resumable upload ids replaced. */
export function redactUrl(raw: string): string {
  const url = raw.replace(RESUMABLE_UPLOAD_ID, '$1[REDACTED]');
  const q = url.indexOf('?');
  if (q < 0) return url;
  const query = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq < 0 ? pair : pair.slice(0, eq);
      return SECRET_PARAMETERS.has(decodedName(name)) ? `${name}=[REDACTED]` : pair;
    })
    .join('&');
  return `${url.slice(0, q)}?${query}`;
}

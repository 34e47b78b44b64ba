/**
 * The bearer token lives in this tab's sessionStorage only: it survives a
 * reload (so the console can resume a session), dies with the tab, is never
 * written to localStorage, a cookie or a URL, and is never logged.
 */
const KEY = "golem-stream-console:token";

export function readToken(): string | undefined {
  return sessionStorage.getItem(KEY) ?? undefined;
}

export function saveToken(token: string): void {
  sessionStorage.setItem(KEY, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(KEY);
}

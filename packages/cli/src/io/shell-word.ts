/** Text printed for a person to paste into a shell: a path, a file name. */

/** `text` as one shell word: as it is when that is safe, single-quoted otherwise. */
export function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}

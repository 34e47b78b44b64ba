/** Waiting on the page's DOM by its changes (a MutationObserver), never by a clock. */
export function until(node: Node, ready: () => boolean): Promise<void> {
  if (ready()) return Promise.resolve();
  return new Promise((resolve) => {
    const observer = new MutationObserver(() => {
      if (!ready()) return;
      observer.disconnect();
      resolve();
    });
    observer.observe(node, { subtree: true, childList: true, characterData: true, attributes: true });
  });
}

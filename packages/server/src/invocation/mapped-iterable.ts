/**
 * `source` with `convert` applied to each item, as one plain async iterator.
 *
 * An async generator per mapping step (`for await … yield convert(item)`)
 * costs its own awaits and promises for every item; a typed agent reading an
 * input stream went through three of them (the queue, the element-kind
 * selection, the contract's conversion). This forwards `next` with one
 * `then`. `return` reaches the source, so an agent that stops reading still
 * ends the source's iteration (the input queue then reports consumer-drop);
 * a `convert` that throws ends it too, as `for await` would, and the error
 * reaches the reader.
 */
export function mapAsyncIterable<S, T>(source: AsyncIterable<S>, convert: (item: S) => T): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      const inner = source[Symbol.asyncIterator]();
      const close = (): Promise<unknown> => Promise.resolve(inner.return?.()).catch(() => undefined);
      return {
        next: () =>
          inner.next().then(
            (result): IteratorResult<T> | Promise<IteratorResult<T>> => {
              if (result.done === true) return { done: true, value: undefined };
              let value: T;
              try {
                value = convert(result.value);
              } catch (error) {
                return close().then(() => Promise.reject(error));
              }
              return { done: false, value };
            },
          ),
        return: (value?: unknown) => close().then(() => ({ done: true, value: value as T })),
      };
    },
  };
}

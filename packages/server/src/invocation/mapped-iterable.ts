/**
 * An async iterator that can also answer at once when its next result is already there (the
 * input queue's, when an item is queued): `undefined` when `next` would wait. It answers only
 * when no call to `next` is waiting, so calls are still answered in call order; it throws what
 * `next` would reject with.
 */
export interface ReadyIterator<T> {
  takeNow(): IteratorResult<T, void> | undefined;
}

/**
 * `source` with `convert` applied to each item, as one plain async iterator.
 *
 * An async generator per mapping step (`for await … yield convert(item)`)
 * costs its own awaits and promises for every item; a typed agent reading an
 * input stream went through three of them (the queue, the element-kind
 * selection, the contract's conversion). This forwards `next` with one
 * `then`, or with none when the source has its next item ready (`ReadyIterator`). `return`
 * reaches the source, so an agent that stops reading still
 * ends the source's iteration (the input queue then reports consumer-drop);
 * a `convert` that throws ends it too, as `for await` would, and the error
 * reaches the reader.
 */
export function mapAsyncIterable<S, T>(source: AsyncIterable<S>, convert: (item: S) => T): AsyncIterable<T> {
  // A mapping of a mapping is one mapping of the first source: a typed
  // agent's input went through two (the element kind's, the contract's),
  // each a promise and a reaction per item. A conversion that throws still
  // ends the first source's iteration, as the inner mapping would have.
  if (source instanceof MappedIterable) {
    const inner = source as MappedIterable<unknown, S>;
    return new MappedIterable(inner.source, (item: unknown) => convert(inner.convert(item)));
  }
  return new MappedIterable(source, convert);
}

/**
 * The source and conversion of an iterable made by `mapAsyncIterable`, for
 * a consumer that iterates it with its own `for await`
 * (`driveOutputSource`): it iterates the source and converts in its loop,
 * without the mapped iterator's promise and reaction per item. Undefined
 * for any other iterable.
 */
export function mappedParts(
  iterable: unknown,
): { readonly source: AsyncIterable<unknown>; readonly convert: (item: unknown) => unknown } | undefined {
  return iterable instanceof MappedIterable ? (iterable as MappedIterable<unknown, unknown>) : undefined;
}

/** `source` with `convert` applied to each item (see mapAsyncIterable). */
class MappedIterable<S, T> implements AsyncIterable<T> {
  constructor(
    readonly source: AsyncIterable<S>,
    readonly convert: (item: S) => T,
  ) {}

  [Symbol.asyncIterator](): AsyncIterator<T> {
    const convert = this.convert;
    const inner = this.source[Symbol.asyncIterator]();
    const close = (): Promise<unknown> => Promise.resolve(inner.return?.()).catch(() => undefined);
    const mapped = (result: IteratorResult<S>): IteratorResult<T> | Promise<IteratorResult<T>> => {
      if (result.done === true) return { done: true, value: undefined };
      let value: T;
      try {
        value = convert(result.value);
      } catch (error) {
        return close().then(() => Promise.reject(error));
      }
      return { done: false, value };
    };
    // A queued item is mapped at once and handed over in one settled promise: no promise of the
    // source's and reaction on it per item (the agent's `for await` still awaits the one).
    const takeNow = (inner as Partial<ReadyIterator<S>>).takeNow;
    const ready = typeof takeNow === "function" ? (): IteratorResult<S, void> | undefined => takeNow.call(inner) : undefined;
    return {
      next: () => {
        if (ready !== undefined) {
          let result: IteratorResult<S, void> | undefined;
          try {
            result = ready();
          } catch (error) {
            return Promise.reject(error);
          }
          if (result !== undefined) return Promise.resolve(mapped(result));
        }
        return inner.next().then(mapped);
      },
      return: (value?: unknown) => close().then(() => ({ done: true, value: value as T })),
    };
  }
}

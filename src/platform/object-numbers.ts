/**
 * Numbers objects by identity, each the first time it is asked for, from 1 up: a number names one
 * object without holding it (a WeakMap), so a replaced object's number is never given to another
 * and the object can be collected.
 */
export function objectNumbers<T extends object>(): (object: T) => number {
  const numbers = new WeakMap<T, number>();
  let last = 0;
  return (object) => {
    let n = numbers.get(object);
    if (n === undefined) numbers.set(object, (n = ++last));
    return n;
  };
}

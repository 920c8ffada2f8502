/**
 * Sets `key` as the newest entry of `map` (a Map iterates in insertion order) and drops the oldest
 * entries beyond `max`: the eviction of the service's bounded caches, least recently set first.
 */
export function setNewest<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > max) map.delete(map.keys().next().value!);
}

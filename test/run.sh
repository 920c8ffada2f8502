#!/usr/bin/env bash
# The README's test command (npm test). Uses TEST_DATABASE_URL and TEST_REDIS_URL when set;
# otherwise starts throwaway servers. Tests never skip for want of them: they fail.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${TEST_DATABASE_URL:-}" ] || [ -z "${TEST_REDIS_URL:-}" ]; then
  source test/services.sh
fi
# Node 20's --test takes no globs: list the files, and fail when there are none.
mapfile -t files < <(find test -name '*.test.ts' -type f | sort)
if [ "${#files[@]}" -eq 0 ]; then
  echo "test/run.sh: no test files found" >&2
  exit 1
fi
node --import tsx --test --test-concurrency=2 "$@" "${files[@]}"

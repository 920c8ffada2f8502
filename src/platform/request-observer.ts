import type { DescMethod } from "@bufbuild/protobuf";

/** The three doors that serve every method (docs/adr/0001-proto-first-three-doors.md). */
export type Door = "rest" | "connect" | "grpc";

/**
 * Told about every answered method call by the gateway: metrics and the shared request statistics
 * listen here. Called on the request path, so an observer must not block, await or throw.
 */
export interface RequestObserver {
  /**
   * `status` is the HTTP status of the outcome as the REST door answers it, on every door (docs/observability.md);
   * `tenantId` is known once the caller was authenticated.
   */
  observe(door: Door, method: DescMethod, status: number, durationMs: number, tenantId: string | undefined): void;
}

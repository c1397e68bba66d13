package io.vivarium.api;

import java.util.List;

/**
 * Body of {@code POST /v1/snapshots}: boot a fresh sandbox, let it warm up, capture it under
 * {@code tag}, remove it. Since 1.3.
 *
 * @param tag a plain name ({@link SnapshotService#TAG}), not yet used by this tenant
 * @param backend the backend to boot on, or null for the default one
 * @param bootWaitSecs seconds to wait after the boot (and after {@code setup}) before capturing, 0 to 600;
 *        null for 0
 * @param setup a command run in the fresh sandbox before the wait (e.g. installing what children need),
 *        or null; a non-zero exit fails the build
 * @param memoryLimitMib memory limit of the builder sandbox, or null
 * @param diskLimitMib workspace size of the builder sandbox and so of every child, or null for the default
 * @param network the builder's network (a setup that downloads needs {@code egress}), recorded in the
 *        snapshot so that every child gets it as a branch's children do; null for the operator's default.
 *        Since 2.6.
 */
public record SnapshotRequest(String tag, String backend, Integer bootWaitSecs, List<String> setup,
        Integer memoryLimitMib, Integer diskLimitMib, NetworkPolicy network) {

    /** The request of API 1.3 to 2.5 (the operator's default network). */
    public SnapshotRequest(String tag, String backend, Integer bootWaitSecs, List<String> setup, Integer memoryLimitMib,
            Integer diskLimitMib) {
        this(tag, backend, bootWaitSecs, setup, memoryLimitMib, diskLimitMib, null);
    }
}

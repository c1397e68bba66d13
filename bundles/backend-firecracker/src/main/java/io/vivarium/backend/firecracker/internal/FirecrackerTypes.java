package io.vivarium.backend.firecracker.internal;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;

/**
 * The bodies {@link FirecrackerApi} sends and reads, named and shaped as the definitions of the
 * API document it targets ({@link FirecrackerApi#TARGET}): each record is one definition, with
 * the fields Vivarium sets (Firecracker refuses a field it does not know, so none more).
 */
final class FirecrackerTypes {
    private FirecrackerTypes() {
    }

    /** {@code MachineConfiguration}: {@code track_dirty_pages} is what makes diff snapshots possible. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record MachineConfig(int vcpuCount, int memSizeMib, boolean trackDirtyPages) {
    }

    /** {@code BootSource}. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    @JsonInclude(JsonInclude.Include.NON_NULL)
    record BootSource(String kernelImagePath, String initrdPath, String bootArgs) {
    }

    /** {@code Drive}, a virtio-block one: the document's path parameter {@code drive_id} is its {@code driveId}. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record Drive(String driveId, String pathOnHost, boolean isRootDevice, boolean isReadOnly) {
    }

    /**
     * {@code Vsock}: the guest's agent is reached through it; Firecracker binds {@code uds_path}
     * and forwards a connection on it to the guest's port named in a {@code CONNECT <port>} line.
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record Vsock(long guestCid, String udsPath) {
    }

    /** {@code SnapshotCreateParams}. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record SnapshotCreate(String snapshotType, String snapshotPath, String memFilePath) {
        static SnapshotCreate full(String snapshotPath, String memFilePath) {
            return new SnapshotCreate("Full", snapshotPath, memFilePath);
        }

        /** Only the pages written since the snapshot before: needs {@link MachineConfig#trackDirtyPages}. */
        static SnapshotCreate diff(String snapshotPath, String memFilePath) {
            return new SnapshotCreate("Diff", snapshotPath, memFilePath);
        }
    }

    /** {@code MemoryBackend}: guest memory from a file. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record MemoryBackend(String backendType, String backendPath) {
        static MemoryBackend file(String path) {
            return new MemoryBackend("File", path);
        }
    }

    /** {@code VsockOverride}. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record VsockOverride(String udsPath) {
    }

    /**
     * {@code SnapshotLoadParams}: the vsock's socket is always given anew ({@code vsock_override}),
     * as the one in the snapshot is the process before's, whose path a relaunch must not reuse.
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record SnapshotLoad(String snapshotPath, MemoryBackend memBackend, boolean trackDirtyPages, boolean resumeVm,
            VsockOverride vsockOverride) {
    }

    /** {@code InstanceInfo}: {@code state} is {@code Not started}, {@code Running} or {@code Paused}. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record InstanceInfo(String appName, String id, String state, String vmmVersion) {
    }
}

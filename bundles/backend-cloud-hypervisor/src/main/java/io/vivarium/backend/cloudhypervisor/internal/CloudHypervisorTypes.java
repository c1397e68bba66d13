package io.vivarium.backend.cloudhypervisor.internal;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import java.util.List;

/**
 * The bodies {@link CloudHypervisorApi} sends and reads, named and shaped as the schemas of the
 * API document it targets ({@link CloudHypervisorApi#TARGET}): each record is one schema, with the
 * fields Vivarium sets (Cloud Hypervisor refuses a field it does not know, so none more).
 */
final class CloudHypervisorTypes {
    private CloudHypervisorTypes() {
    }

    /** {@code VmConfig}: what {@code vm.create} makes, booted by {@code vm.boot}. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    @JsonInclude(JsonInclude.Include.NON_NULL)
    record VmConfig(CpusConfig cpus, MemoryConfig memory, PayloadConfig payload, List<DiskConfig> disks,
            VsockConfig vsock, ConsoleConfig serial, ConsoleConfig console) {
    }

    /** {@code CpusConfig}: no hot-plug, so as many at most as at boot. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record CpusConfig(int bootVcpus, int maxVcpus) {
        static CpusConfig of(int vcpus) {
            return new CpusConfig(vcpus, vcpus);
        }
    }

    /** {@code MemoryConfig}: {@code size} in bytes. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record MemoryConfig(long size) {
        static MemoryConfig mib(long mib) {
            return new MemoryConfig(mib << 20);
        }
    }

    /** {@code PayloadConfig}: a kernel booted directly, with its initramfs and command line. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    @JsonInclude(JsonInclude.Include.NON_NULL)
    record PayloadConfig(String kernel, String initramfs, String cmdline) {
    }

    /** {@code DiskConfig}. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record DiskConfig(String path, boolean readonly) {
    }

    /**
     * {@code VsockConfig}: the guest's agent is reached through it; Cloud Hypervisor binds
     * {@code socket} and forwards a connection on it to the guest's port named in a
     * {@code CONNECT <port>} line, as Firecracker does.
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record VsockConfig(long cid, String socket) {
    }

    /** {@code ConsoleConfig} (also the serial port's): {@code Off}, {@code Null}, or {@code File} with {@code file}. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    @JsonInclude(JsonInclude.Include.NON_NULL)
    record ConsoleConfig(String mode, String file) {
        static ConsoleConfig off() {
            return new ConsoleConfig("Off", null);
        }

        static ConsoleConfig toFile(String file) {
            return new ConsoleConfig("File", file);
        }
    }

    /** {@code VmSnapshotConfig}: a {@code file://} URL of the directory the snapshot is written into. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record VmSnapshotConfig(String destinationUrl) {
    }

    /** {@code RestoreConfig}: the {@code file://} URL of a directory {@code vm.snapshot} wrote. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record RestoreConfig(String sourceUrl, boolean resume) {
    }
}

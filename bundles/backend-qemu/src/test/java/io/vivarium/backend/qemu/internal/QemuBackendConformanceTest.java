package io.vivarium.backend.qemu.internal;

import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.Hibernation;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.testkit.CheckpointsSuite;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import org.junit.jupiter.api.BeforeEach;

/**
 * The kit's contract, checkpoints, pause and the cold tier included, on real VMs of the python image (the default
 * one has no interpreter, and QEMU reports eval: the kit's eval check runs), their disks made through
 * the qemu feature's storage. The checks that only exec share one VM; every other check boots a VM of
 * its own (about 3 to 6 s under TCG on 2 cores).
 */
class QemuBackendConformanceTest extends CheckpointsSuite {

    private static final String IMAGE = "python";

    @BeforeEach
    void needsQemuAndImage() {
        QemuHost.assumeImage(IMAGE);
    }

    @Override
    protected InstanceSpec spec(String id, Path dir, Integer pidsLimit, Integer diskLimitMib) {
        return new InstanceSpec(id, dir, null, null, IMAGE, pidsLimit, diskLimitMib);
    }

    /** The revision before the current one, let go of when the next one comes, as OSGi deactivates it first. */
    private QemuHost.Revision current;

    /**
     * QEMU serves one client per socket, so the previous revision lets go of its VMs first, as a
     * deactivated bundle revision or a stopped daemon does before the next one adopts them.
     */
    @Override
    protected SandboxBackend newBackend(Path stateDir) {
        if (current != null) {
            current.close();
        }
        current = QemuHost.revision(QemuHost.settings());
        return current.backend();
    }

    @Override
    protected StorageStrategies storage() {
        return QemuHost.STORAGE;
    }

    @Override
    protected Checkpoints checkpoints(SandboxBackend backend) {
        return current.of(backend).checkpoints();
    }

    @Override
    protected PauseControl pauseControl(SandboxBackend backend) {
        return current.of(backend).pause();
    }

    @Override
    protected Hibernation hibernation(SandboxBackend backend) {
        return current.of(backend).hibernation();
    }

    @Override
    protected Map<Feature, String> lacks() {
        return Map.of(Feature.LIMITS, "a guest is bounded by its memory and its image's disk; pids_limit and "
                + "disk_limit_mib are refused (501)");
    }

    @Override
    protected void killInstance(SandboxInstance instance) {
        ((QemuInstance) instance).record().process().kill(Duration.ofSeconds(5));
    }

    /** Kills the agent from inside, as a guest process could; the guest's init restarts it. */
    @Override
    protected void killAgent(SandboxInstance instance) {
        exec(instance, "/bin/sh", "-c", "(sleep 0.3; kill -9 $(pidof vivarium-agent)) >/dev/null 2>&1 </dev/null &");
    }
}

package io.vivarium.backend.qemu.internal;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import io.vivarium.common.bundles.BundleClasses;
import io.vivarium.common.net.SandboxNetworks;
import io.vivarium.kit.backend.InstanceTable;

import org.osgi.framework.BundleContext;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.metatype.annotations.Designate;

/**
 * One revision of the QEMU backend: its settings, the accelerator chosen on this host, the host
 * probe, the launcher and the VMs it created or adopted, which the backend and its seams share. A
 * private service of this bundle. VMs outlive it: deactivation only lets go of this revision's
 * monitor and agent connections (QEMU serves one client per socket), and the next revision adopts
 * the VMs. It also keeps every VM's console and QEMU log bounded ({@link BoundedLog}).
 */
@Component(service = QemuRuntime.class, configurationPid = QemuConfig.PID)
@Designate(ocd = QemuConfig.class)
public class QemuRuntime implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(QemuRuntime.class.getName());
    /** A VM's console and QEMU log: past 1 MiB, cut to the last 256 KiB, looked at every 5 s. */
    private static final BoundedLog LOG_BOUND = new BoundedLog(1 << 20, 256 << 10);
    private static final long CAP_EVERY_SECONDS = 5;
    /** The part of the sandboxes' address pool QEMU hands out (procbox and gVisor take the others). */
    static final String NETWORK_BLOCKS = "10.213.192.0/18";

    private final QemuSettings settings;
    private final QemuHostProbe probe;
    private final SandboxNetworks networks;
    private final InstanceTable<QemuInstance> instances = new InstanceTable<>(QemuInstance.class, QemuBackend.NAME);
    private final QemuLauncher launcher;
    private final RootDisks rootDisks;
    private final ScheduledExecutorService logCapper = Executors.newSingleThreadScheduledExecutor(
            Thread.ofVirtual().name("qemu log cap").factory());

    @Activate
    public QemuRuntime(QemuConfig config, BundleContext context) {
        this(QemuSettings.from(config), Accelerator.detect(Path.of("/proc/cpuinfo"), Path.of("/dev/kvm")));
        BundleClasses.loadAll(context.getBundle());
        networks.removeOrphansWhereSupported();
    }

    QemuRuntime(QemuSettings settings, Accelerator accelerator) {
        this.settings = settings;
        this.probe = new QemuHostProbe(settings, accelerator);
        this.networks = new SandboxNetworks(NETWORK_BLOCKS);
        this.launcher = new QemuLauncher(settings, accelerator, instances, networks);
        this.rootDisks = new RootDisks();
        logCapper.scheduleWithFixedDelay(this::capLogs, CAP_EVERY_SECONDS, CAP_EVERY_SECONDS, TimeUnit.SECONDS);
    }

    QemuSettings settings() {
        return settings;
    }

    QemuHostProbe probe() {
        return probe;
    }

    QemuLauncher launcher() {
        return launcher;
    }

    /** The disks of template images' roots, which creates and forks share. */
    RootDisks rootDisks() {
        return rootDisks;
    }

    InstanceTable<QemuInstance> instances() {
        return instances;
    }

    private void capLogs() {
        for (QemuInstance vm : instances.all()) {
            VmFiles files = vm.record().files();
            for (Path log : List.of(files.console(), files.qemuLog())) {
                try {
                    LOG_BOUND.cap(log);
                } catch (IOException e) {
                    LOG.log(System.Logger.Level.WARNING, "cannot cut " + log + " of sandbox " + vm.id() + ": " + e.getMessage());
                }
            }
        }
    }

    /** Lets go of every VM; they keep running for the next revision or daemon to adopt. */
    @Deactivate
    @Override
    public void close() {
        logCapper.shutdownNow();
        instances.letGoOfAll();
    }
}

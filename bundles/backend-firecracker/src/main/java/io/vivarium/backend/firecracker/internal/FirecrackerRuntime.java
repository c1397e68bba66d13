package io.vivarium.backend.firecracker.internal;

import io.vivarium.kit.vmm.HostKvm;
import io.vivarium.kit.vmm.VmmRuntime;
import io.vivarium.kit.vmm.VmmSettings;
import java.io.File;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.osgi.framework.BundleContext;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.metatype.annotations.Designate;

/**
 * One revision of the Firecracker backend: the kit's {@link VmmRuntime} with {@link
 * FirecrackerDriver}, from this bundle's configuration. A private service of this bundle.
 */
@Component(service = FirecrackerRuntime.class, configurationPid = FirecrackerConfig.PID)
@Designate(ocd = FirecrackerConfig.class)
public class FirecrackerRuntime {

    private static final String INSTALL = "(Firecracker is in no Debian release): install a release binary from "
            + "https://github.com/firecracker-microvm/firecracker/releases there, or set firecracker_path (PID "
            + FirecrackerConfig.PID + ")";

    private final VmmRuntime vmm;

    @Activate
    public FirecrackerRuntime(FirecrackerConfig config, BundleContext context) {
        this(settings(config), HostKvm.check(), agentDir(context));
    }

    /** @param agentDir where to write the kit's agent binary, whose launch mode starts each VMM detached */
    FirecrackerRuntime(VmmSettings settings, HostKvm kvm, Path agentDir) {
        this.vmm = new VmmRuntime(FirecrackerBackend.NAME, settings, new FirecrackerDriver(), kvm, agentDir, INSTALL,
                Map.of("api", "Firecracker API " + FirecrackerApi.TARGET
                        + " (the document this backend is written and contract-tested against)"));
    }

    static VmmSettings settings(FirecrackerConfig config) {
        return new VmmSettings(Path.of(config.firecracker__path()), VmmSettings.imageDir(config.image__dir()),
                config.default__image(), config.default__memory__mib(), config.default__vcpus(), config.workspace__mib(),
                Duration.ofSeconds(config.boot__timeout__secs()),
                Path.of(System.getProperty("java.io.tmpdir"), "vivarium-firecracker"));
    }

    private static Path agentDir(BundleContext context) {
        File data = context.getDataFile("agent");
        return data != null ? data.toPath() : Path.of(System.getProperty("java.io.tmpdir"), "vivarium-firecracker-agent");
    }

    VmmRuntime vmm() {
        return vmm;
    }

    /** Lets go of every microVM of this revision; they keep running. */
    @Deactivate
    void close() {
        vmm.close();
    }
}

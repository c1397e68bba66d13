package io.vivarium.backend.cloudhypervisor.internal;

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
 * One revision of the Cloud Hypervisor backend: the kit's {@link VmmRuntime} with {@link
 * CloudHypervisorDriver}, from this bundle's configuration. A private service of this bundle.
 */
@Component(service = CloudHypervisorRuntime.class, configurationPid = CloudHypervisorConfig.PID)
@Designate(ocd = CloudHypervisorConfig.class)
public class CloudHypervisorRuntime {

    private static final String INSTALL = "(Cloud Hypervisor is in no Debian release): install a release binary from "
            + "https://github.com/cloud-hypervisor/cloud-hypervisor/releases there, or set cloud_hypervisor_path (PID "
            + CloudHypervisorConfig.PID + ")";

    private final VmmRuntime vmm;

    @Activate
    public CloudHypervisorRuntime(CloudHypervisorConfig config, BundleContext context) {
        this(settings(config), HostKvm.check(), agentDir(context));
    }

    /** @param agentDir where to write the kit's agent binary, whose launch mode starts each VMM detached */
    CloudHypervisorRuntime(VmmSettings settings, HostKvm kvm, Path agentDir) {
        this.vmm = new VmmRuntime(CloudHypervisorBackend.NAME, settings, new CloudHypervisorDriver(), kvm, agentDir, INSTALL,
                Map.of("api", "Cloud Hypervisor API " + CloudHypervisorApi.TARGET
                        + " (the document this backend is written and contract-tested against)"));
    }

    static VmmSettings settings(CloudHypervisorConfig config) {
        return new VmmSettings(Path.of(config.cloud__hypervisor__path()), VmmSettings.imageDir(config.image__dir()),
                config.default__image(), config.default__memory__mib(), config.default__vcpus(), config.workspace__mib(),
                Duration.ofSeconds(config.boot__timeout__secs()),
                Path.of(System.getProperty("java.io.tmpdir"), "vivarium-cloud-hypervisor"));
    }

    private static Path agentDir(BundleContext context) {
        File data = context.getDataFile("agent");
        return data != null ? data.toPath() : Path.of(System.getProperty("java.io.tmpdir"), "vivarium-cloud-hypervisor-agent");
    }

    VmmRuntime vmm() {
        return vmm;
    }

    /** Lets go of every VM of this revision; they keep running. */
    @Deactivate
    void close() {
        vmm.close();
    }
}

package io.vivarium.backend.gvisor.internal;

import java.io.File;

import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.Images;
import io.vivarium.common.backend.DelegatingImagesBackend;
import io.vivarium.common.bundles.BundleClasses;

import org.osgi.framework.BundleContext;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.metatype.annotations.Designate;

/**
 * Registers {@link GvisorBackend} and its {@link GvisorImages}. Containers outlive the component: deactivation only closes this
 * revision's agent connections, and the next activation adopts the containers. The agent binary
 * is written to the bundle's data area; running containers hold the file they started with.
 */
@Component(service = SandboxBackend.class, property = SandboxBackend.NAME_PROPERTY + "=" + GvisorBackend.NAME,
        configurationPid = GvisorConfig.PID)
@Designate(ocd = GvisorConfig.class)
public class GvisorBackendComponent extends DelegatingImagesBackend {

    private final GvisorBackend backend;

    @Activate
    public GvisorBackendComponent(GvisorConfig config, BundleContext context) {
        BundleClasses.loadAll(context.getBundle());
        File data = context.getDataFile("agent");
        this.backend = new GvisorBackend(GvisorSettings.from(config,
                data == null ? GvisorSettings.defaultAgentDir() : data.toPath()));
    }

    @Deactivate
    void deactivate() {
        backend.close();
    }

    @Override
    protected SandboxBackend backend() {
        return backend;
    }

    @Override
    protected Images images() {
        return backend.images();
    }
}

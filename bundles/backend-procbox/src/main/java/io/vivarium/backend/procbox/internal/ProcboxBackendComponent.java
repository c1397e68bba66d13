package io.vivarium.backend.procbox.internal;

import java.io.File;
import java.nio.file.Path;

import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.common.backend.DelegatingImagesBackend;
import io.vivarium.common.bundles.BundleClasses;

import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.Constants;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.metatype.annotations.Designate;

/**
 * Registers {@link ProcboxBackend}. Sandboxes outlive the component, and the next activation adopts
 * them: deactivation only drops this revision's idle connections to their agents and discards its
 * pools, behind it unless the daemon is stopping (the next revision does not wait for that). The
 * agent binary is written to the bundle's data area, which a bundle update keeps and a daemon
 * restart (which cleans felix-cache) loses: either way it is written again at activation, and
 * running sandboxes hold the file they were started with ({@link AgentBinary}).
 */
@Component(service = SandboxBackend.class, property = SandboxBackend.NAME_PROPERTY + "=" + ProcboxBackend.NAME,
        configurationPid = ProcboxConfig.PID)
@Designate(ocd = ProcboxConfig.class)
public class ProcboxBackendComponent extends DelegatingImagesBackend {

    private final ProcboxBackend backend;
    private final ProcboxImages images;
    private final BundleClasses classes;

    @Activate
    public ProcboxBackendComponent(ProcboxConfig config, BundleContext context) {
        classes = BundleClasses.loadInBackground(context.getBundle());
        File data = context.getDataFile("agent");
        this.backend = new ProcboxBackend(ProcboxSettings.from(config,
                data == null ? ProcboxSettings.defaultAgentDir() : data.toPath()));
        this.images = backend.images();
        // where core keeps its state unless its own configuration says otherwise; a create tells for sure
        String stateDir = context.getProperty("vivarium.state.dir");
        backend.removeAbandonedPools(Path.of(stateDir == null || stateDir.isEmpty() ? "var" : stateDir));
    }

    @Deactivate
    void deactivate(BundleContext context) {
        if (context.getBundle(Constants.SYSTEM_BUNDLE_ID).getState() == Bundle.STOPPING) {
            // the daemon is stopping: no pooled sandbox outlives it
            backend.close();
        } else {
            // an update (or a stop of this bundle alone): core's requests wait for the next revision, not for the pools
            backend.closeInBackground();
        }
        classes.await();
    }

    @Override
    protected SandboxBackend backend() {
        return backend;
    }

    @Override
    protected Images images() {
        return images;
    }
}

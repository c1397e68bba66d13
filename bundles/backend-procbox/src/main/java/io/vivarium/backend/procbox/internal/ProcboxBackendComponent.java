package io.vivarium.backend.procbox.internal;

import java.io.File;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import io.vivarium.api.ExecRequest;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.Capabilities;
import io.vivarium.api.spi.CapturedImage;
import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.StoredArtifact;
import io.vivarium.common.bundles.BundleClasses;
import io.vivarium.api.spi.ScratchRun;

import org.osgi.framework.BundleContext;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.metatype.annotations.Designate;

/**
 * Registers {@link ProcboxBackend}. Sandboxes outlive the component, and the next activation adopts
 * them: deactivation only drops this revision's idle connections to their agents. The agent binary
 * is written to the bundle's data area, which a bundle update keeps and a daemon restart (which
 * cleans felix-cache) loses: either way it is written again at activation, and running sandboxes
 * hold the file they were started with ({@link AgentBinary}).
 */
@Component(service = SandboxBackend.class, property = SandboxBackend.NAME_PROPERTY + "=" + ProcboxBackend.NAME,
        configurationPid = ProcboxConfig.PID)
@Designate(ocd = ProcboxConfig.class)
public class ProcboxBackendComponent implements SandboxBackend, Images {

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
    }

    @Deactivate
    void deactivate() {
        backend.close();
        classes.await();
    }

    @Override
    public String name() {
        return backend.name();
    }

    @Override
    public Capabilities capabilities() {
        return backend.capabilities();
    }

    @Override
    public Availability availability() {
        return backend.availability();
    }

    @Override
    public Map<String, String> details() {
        return backend.details();
    }

    @Override
    public SandboxInstance create(InstanceSpec spec) {
        return backend.create(spec);
    }

    @Override
    public SandboxInstance adopt(InstanceSpec spec, InstanceState state) throws InstanceGoneException {
        return backend.adopt(spec, state);
    }

    @Override
    public void destroy(InstanceSpec spec, InstanceState state) {
        backend.destroy(spec, state);
    }

    @Override
    public ScratchRun dryRun(SandboxInstance instance, ExecRequest request) {
        return backend.dryRun(instance, request);
    }

    @Override
    public String captures() {
        return images.captures();
    }

    @Override
    public CapturedImage capture(SandboxInstance instance, Path imageDir, StorageStrategies storage,
            OperationContext context) {
        return images.capture(instance, imageDir, storage, context);
    }

    @Override
    public SandboxInstance fork(InstanceSpec spec, Path imageDir, StorageStrategies storage, OperationContext context) {
        return images.fork(spec, imageDir, storage, context);
    }

    /** Delegated like the rest, so that {@link ProcboxImages} decides (today: {@link Images}' default). */
    @Override
    public CapturedImage compact(Path from, Path to, List<StoredArtifact> artifacts, StorageStrategies storage,
            OperationContext context) throws IOException {
        return images.compact(from, to, artifacts, storage, context);
    }

    @Override
    public String missingArtifact(Path imageDir) {
        return images.missingArtifact(imageDir);
    }
}

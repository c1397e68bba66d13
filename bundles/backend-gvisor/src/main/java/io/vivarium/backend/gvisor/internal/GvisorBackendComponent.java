package io.vivarium.backend.gvisor.internal;

import java.io.File;
import java.util.Map;

import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.Capabilities;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.common.bundles.BundleClasses;

import org.osgi.framework.BundleContext;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.metatype.annotations.Designate;

/**
 * Registers {@link GvisorBackend}. Containers outlive the component: deactivation only closes this
 * revision's agent connections, and the next activation adopts the containers. The agent binary
 * is written to the bundle's data area; running containers hold the file they started with.
 */
@Component(service = SandboxBackend.class, property = SandboxBackend.NAME_PROPERTY + "=" + GvisorBackend.NAME,
        configurationPid = GvisorConfig.PID)
@Designate(ocd = GvisorConfig.class)
public class GvisorBackendComponent implements SandboxBackend {

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
    public SandboxInstance create(InstanceSpec spec, OperationContext context) {
        return backend.create(spec, context);
    }

    @Override
    public SandboxInstance adopt(InstanceSpec spec, InstanceState state) throws InstanceGoneException {
        return backend.adopt(spec, state);
    }

    @Override
    public void destroy(InstanceSpec spec, InstanceState state) {
        backend.destroy(spec, state);
    }
}

package io.vivarium.common.backend;

import java.util.Map;

import io.vivarium.api.ExecRequest;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.Capabilities;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.api.spi.ScratchRun;

/**
 * A backend's DS component: registers as the {@link SandboxBackend} service and forwards every
 * method, default ones included, to the backend it made at activation. A default left to the
 * interface would run on the component and never reach the backend's override; the forwarding
 * test checks that none is. The DS annotations stay on the subclass (bnd reads them from there).
 * For a backend with images, {@link DelegatingImagesBackend}.
 */
public abstract class DelegatingBackend implements SandboxBackend {

    /** The backend this component registers. */
    protected abstract SandboxBackend backend();

    @Override
    public String name() {
        return backend().name();
    }

    @Override
    public Capabilities capabilities() {
        return backend().capabilities();
    }

    @Override
    public Availability availability() {
        return backend().availability();
    }

    @Override
    public SandboxInstance create(InstanceSpec spec) {
        return backend().create(spec);
    }

    @Override
    public SandboxInstance create(InstanceSpec spec, OperationContext context) {
        return backend().create(spec, context);
    }

    @Override
    public Map<String, String> details() {
        return backend().details();
    }

    @Override
    public SandboxInstance adopt(InstanceSpec spec, InstanceState state) throws InstanceGoneException {
        return backend().adopt(spec, state);
    }

    @Override
    public void destroy(InstanceSpec spec, InstanceState state) {
        backend().destroy(spec, state);
    }

    @Override
    public void pause(SandboxInstance instance) {
        backend().pause(instance);
    }

    @Override
    public void resume(SandboxInstance instance) {
        backend().resume(instance);
    }

    @Override
    public ScratchRun dryRun(SandboxInstance instance, ExecRequest request) {
        return backend().dryRun(instance, request);
    }

    @Override
    public void snapshot(SandboxInstance instance, String tag) {
        backend().snapshot(instance, tag);
    }

    @Override
    public SandboxInstance restore(SandboxInstance instance, String tag) {
        return backend().restore(instance, tag);
    }
}

package io.vivarium.core.internal;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

import io.vivarium.api.Caller;
import io.vivarium.api.ExposedPort;
import io.vivarium.api.PortService;
import io.vivarium.common.ports.PortTokens;

/** The {@link PortService} ({@code /v1/sandboxes/{id}/ports}) as a component: {@link ExposedPorts} over the {@link Core} of the {@link SandboxManager}. */
@Component(service = PortService.class)
public class PortManager implements PortService {
    @Reference
    private SandboxManager manager;
    private ExposedPorts ports;

    @Activate
    void activate() {
        Core core = manager.core();
        ports = new ExposedPorts(core.sandboxes(), core.live(), new PortTokens(core.stateDir()));
    }

    @Override
    public ExposedPort expose(Caller caller, String sandboxId, int port, Duration tokenLifetime) {
        return ports.expose(caller, sandboxId, port, tokenLifetime);
    }

    @Override
    public List<ExposedPort> list(Caller caller, String sandboxId) {
        return ports.list(caller, sandboxId);
    }

    @Override
    public ExposedPort get(Caller caller, String sandboxId, int port) {
        return ports.get(caller, sandboxId, port);
    }

    @Override
    public void close(Caller caller, String sandboxId, int port) {
        ports.close(caller, sandboxId, port);
    }

    @Deprecated(since = "2.8")
    @Override
    public URI upstream(Caller caller, String sandboxId, int port) {
        return ports.upstream(caller, sandboxId, port);
    }

    @Override
    public Forwarding forward(Caller caller, String sandboxId, int port) {
        return ports.forward(caller, sandboxId, port);
    }

    @Override
    public Optional<Caller> signedCaller(String token, String sandboxId, int port) {
        return ports.signedCaller(token, sandboxId, port);
    }
}

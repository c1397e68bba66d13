package io.vivarium.backend.procbox.internal;

import io.vivarium.api.spi.GuestChannel;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.SandboxInstance;

/** A running bubblewrap sandbox, created or adopted. */
final class ProcboxInstance implements SandboxInstance {

    private final String id;
    private final SandboxRecord sandbox;
    private final NsenterChannel channel;

    ProcboxInstance(String id, SandboxRecord sandbox, SandboxCommands commands) {
        this.id = id;
        this.sandbox = sandbox;
        this.channel = new NsenterChannel(id, sandbox, commands);
    }

    @Override
    public String id() {
        return id;
    }

    @Override
    public InstanceState state() {
        return new InstanceState(sandbox.init().pid(), sandbox.toData());
    }

    @Override
    public boolean alive() {
        return sandbox.init().isRunning();
    }

    @Override
    public GuestChannel channel() {
        return channel;
    }

    @Override
    public String workspace() {
        return SandboxCommands.WORKSPACE;
    }
}

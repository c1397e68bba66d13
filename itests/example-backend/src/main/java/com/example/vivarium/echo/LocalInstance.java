package com.example.vivarium.echo;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

import io.vivarium.api.spi.GuestChannel;
import io.vivarium.api.spi.HostFiles;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.SandboxInstance;

/** A directory standing in for a sandbox; alive as long as the directory exists. */
final class LocalInstance implements SandboxInstance {

    private final String id;
    private final Path work;
    private final LocalChannel channel;

    LocalInstance(String id, Path work) {
        this.id = id;
        this.work = work;
        this.channel = new LocalChannel(work);
    }

    @Override
    public String id() {
        return id;
    }

    @Override
    public InstanceState state() {
        return LocalProcessBackend.stateOf(work);
    }

    @Override
    public boolean alive() {
        return Files.isDirectory(work);
    }

    @Override
    public GuestChannel channel() {
        return channel;
    }

    @Override
    public String workspace() {
        return LocalChannel.WORKSPACE;
    }

    /** The workspace is a host directory, so core lists and fingerprints it there. */
    @Override
    public Optional<HostFiles> hostFiles() {
        try {
            // commands run as the daemon's user, which owns the directory
            int uid = (Integer) Files.getAttribute(work, "unix:uid");
            int gid = (Integer) Files.getAttribute(work, "unix:gid");
            return Optional.of(new HostFiles(work, LocalChannel.WORKSPACE, uid, gid));
        } catch (IOException | UnsupportedOperationException e) {
            return Optional.empty();
        }
    }
}

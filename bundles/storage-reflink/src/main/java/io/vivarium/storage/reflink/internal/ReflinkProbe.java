package io.vivarium.storage.reflink.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Whether a filesystem clones files: a small probe file written in a directory of it and cloned
 * with {@code cp --reflink=always}, once per filesystem (keyed by its device number).
 */
final class ReflinkProbe {

    private static final System.Logger LOG = System.getLogger(ReflinkProbe.class.getName());
    private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(10);

    private final Map<Object, Boolean> byDevice = new ConcurrentHashMap<>();

    boolean clones(Path dir) {
        Path existing = dir.toAbsolutePath();
        while (existing != null && !Files.isDirectory(existing)) {
            existing = existing.getParent();
        }
        if (existing == null) {
            return false;
        }
        Object device;
        try {
            device = Files.getAttribute(existing, "unix:dev");
        } catch (IOException | UnsupportedOperationException e) {
            return false;
        }
        Path in = existing;
        return byDevice.computeIfAbsent(device, d -> probe(in));
    }

    private static boolean probe(Path dir) {
        String name = ".reflink-probe-" + UUID.randomUUID();
        Path probe = dir.resolve(name);
        Path clone = dir.resolve(name + ".clone");
        try {
            Files.write(probe, new byte[4096]);
            ReflinkStrategy.cp(probe, clone, true, PROBE_TIMEOUT);
            LOG.log(Level.INFO, "the filesystem of " + dir + " clones files (reflink)");
            return true;
        } catch (IOException e) {
            LOG.log(Level.INFO, "the filesystem of " + dir + " does not clone files, so copies are full: " + e.getMessage());
            return false;
        } finally {
            try {
                Files.deleteIfExists(clone);
                Files.deleteIfExists(probe);
            } catch (IOException e) {
                LOG.log(Level.WARNING, "cannot delete the reflink probe " + probe + ": " + e.getMessage());
            }
        }
    }
}

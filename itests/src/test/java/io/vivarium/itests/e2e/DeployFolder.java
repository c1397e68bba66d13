package io.vivarium.itests.e2e;

import static java.nio.file.StandardCopyOption.ATOMIC_MOVE;
import static java.nio.file.StandardCopyOption.REPLACE_EXISTING;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * A daemon's private FileInstall folder ({@code serve --deploy DIR}), so test classes running side
 * by side never see each other's plugins, and the example plugin jars the build made.
 */
final class DeployFolder {
    private final Path dir;

    DeployFolder(Path dir) {
        this.dir = dir;
    }

    /** The launcher arguments that make the daemon watch this folder. */
    List<String> daemonArgs() {
        return List.of("--deploy", dir.toString());
    }

    /**
     * Copies {@code jar} in as {@code name}, atomically: FileInstall ignores hidden files (the
     * launcher's felix.fileinstall.filter), so it sees the jar only once it is whole.
     */
    void deploy(Path jar, String name) throws IOException {
        Path tmp = dir.resolve("." + name + ".tmp");
        Files.copy(jar, tmp, REPLACE_EXISTING);
        Files.move(tmp, dir.resolve(name), ATOMIC_MOVE, REPLACE_EXISTING);
    }

    void remove(String name) throws IOException {
        Files.delete(dir.resolve(name));
    }

    /** The jar of an example plugin module, as failsafe passes it (vivarium.example.NAME.jar). */
    static Path exampleJar(String name) {
        String path = System.getProperty("vivarium.example." + name + ".jar");
        if (path == null || !Files.isRegularFile(Path.of(path))) {
            throw new IllegalStateException("the example " + name + " jar is not built (" + path
                    + "): run the itests through Maven from the root, e.g. mvn -B verify");
        }
        return Path.of(path);
    }

    /** Polls {@code check} until it returns non-null, or fails after {@code timeout} with {@code what}. */
    static <T> T await(String what, Duration timeout, Callable<T> check) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            T value = check.call();
            if (value != null) {
                return value;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeout.toSeconds() + " s waiting for " + what);
            }
            Thread.sleep(100);
        }
    }
}

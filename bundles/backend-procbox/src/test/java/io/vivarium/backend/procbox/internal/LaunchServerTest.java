package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.kit.agent.AgentBinary;
import io.vivarium.testkit.Bounded;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The agent's {@code --launcher} mode, driven as procbox drives it, with launches that run no sandbox. */
class LaunchServerTest {

    @TempDir
    Path tmp;
    private Path agent;
    private LaunchServer server;

    @BeforeEach
    void install() throws IOException {
        agent = AgentBinary.install(tmp.resolve("agent"));
        server = new LaunchServer(agent);
    }

    @AfterEach
    void close() {
        server.close();
    }

    /** A detached {@code --launch} without an image or view, as procbox's launches are detached. */
    private List<String> launch(String... command) {
        LaunchFiles files = LaunchFiles.in(tmp);
        List<String> argv = new ArrayList<>(List.of(agent.toString(), SandboxCommands.LAUNCH, SandboxCommands.DETACH,
                files.pidFile().toString(), files.infoFile().toString(), "", "", tmp.toString(), "", "--"));
        argv.addAll(List.of(command));
        return argv;
    }

    /** The launch's own process, once it has written its pid file, and waited for to end. */
    private void awaitLaunched() throws Exception {
        Path pidFile = LaunchFiles.in(tmp).pidFile();
        Bounded.until(Duration.ofSeconds(10), "the launch writes its pid", () -> Files.exists(pidFile)
                && !readQuietly(pidFile).isBlank());
        long pid = Long.parseLong(readQuietly(pidFile).strip());
        ProcessHandle.of(pid).ifPresent(p -> Bounded.get(p.onExit(), Duration.ofSeconds(10), "the launch ends"));
        Files.delete(pidFile);
    }

    private static String readQuietly(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            return "";
        }
    }

    @Test
    void runsALaunchWithItsOutputInTheLogAndNothingOfTheDaemonsEnvironment() throws Exception {
        Path log = tmp.resolve("launch.log");

        assertEquals(0, server.launch(launch("/usr/bin/env"), log));
        awaitLaunched();
        assertEquals(0, server.launch(launch("/bin/sh", "-c", "pwd; cat; echo to-stderr >&2"), log), "the next request");
        awaitLaunched();

        assertEquals(List.of("PATH=/usr/bin:/bin", "/", "to-stderr"), Files.readAllLines(log),
                "stdin from /dev/null, in /, PATH alone, both outputs appended");
    }

    @Test
    void aDetachedLaunchIsAnsweredAtOnceAndRunsOnInASessionOfItsOwn() throws Exception {
        Path log = tmp.resolve("detached.log");

        assertEquals(0, server.launch(launch("/bin/sh", "-c", "sleep 0.3; echo done"), log));

        Path pidFile = LaunchFiles.in(tmp).pidFile();
        Bounded.until(Duration.ofSeconds(10), "the launch writes its pid", () -> !readQuietly(pidFile).isBlank());
        ProcessHandle launched = ProcessHandle.of(Long.parseLong(readQuietly(pidFile).strip())).orElseThrow();
        assertTrue(launched.parent().filter(p -> p.pid() == ProcessHandle.current().pid()
                || launcher().map(ProcessHandle::pid).equals(Optional.of(p.pid()))).isEmpty(),
                "reparented away from the daemon and the launcher");
        Bounded.get(launched.onExit(), Duration.ofSeconds(10), "the launch ends");
        assertEquals(List.of("done"), Files.readAllLines(log));
    }

    @Test
    void aServerThatDiedIsStartedAgainForTheNextLaunch() throws Exception {
        Path log = tmp.resolve("again.log");
        assertEquals(0, server.launch(launch("/bin/true"), log));
        awaitLaunched();
        ProcessHandle first = launcher().orElseThrow();
        first.destroyForcibly();
        first.onExit().get();

        assertEquals(0, server.launch(launch("/bin/true"), log));
        awaitLaunched();
        assertTrue(launcher().filter(second -> second.pid() != first.pid()).isPresent(), "a new launcher runs");
    }

    private static Optional<ProcessHandle> launcher() {
        return ProcessHandle.current().children().filter(ProcessHandle::isAlive)
                .filter(p -> p.info().arguments().map(a -> List.of(a).contains("--launcher")).orElse(false)).findFirst();
    }

    @Test
    void refusesWhatIsNotADetachedLaunchAndAnythingOnceClosed() {
        Path log = tmp.resolve("x.log");
        assertThrows(IllegalArgumentException.class, () -> server.launch(List.of(agent.toString(), "--run-as", "0:0"), log));
        List<String> attached = new ArrayList<>(launch("/bin/true"));
        attached.remove(SandboxCommands.DETACH);
        assertThrows(IllegalArgumentException.class, () -> server.launch(attached, log), "it would hold up every other");
        assertThrows(IllegalArgumentException.class, () -> server.launch(launch("/bin/echo", "a\0b"), log));

        server.close();
        assertThrows(IOException.class, () -> server.launch(launch("/bin/true"), log), "no launcher after the backend's end");
    }
}

package com.example.vivarium.echo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;

import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.testkit.FixedStorage;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Adoption and destroy go by the agent's pid <em>and</em> start time: a pid the kernel has handed
 * to another process since is never adopted, nor killed.
 */
class LocalAdoptionTest {

    @TempDir
    Path stateDir;

    private LocalRuntime runtime;
    private LocalBackend backend;
    private Process stranger;

    @BeforeEach
    void backend() {
        runtime = new LocalRuntime(stateDir.resolve("agent"));
        backend = new LocalBackend(runtime);
        Assumptions.assumeTrue(backend.availability().available(), () -> backend.availability().reason());
    }

    @AfterEach
    void letGo() {
        runtime.close();
        if (stranger != null) {
            stranger.destroyForcibly();
        }
    }

    /** A live process that is not an agent, standing for whatever took a dead agent's pid. */
    private HostProcess stranger() throws Exception {
        stranger = new ProcessBuilder("sleep", "60").start();
        return HostProcess.find(stranger.pid()).orElseThrow();
    }

    private InstanceSpec spec(String id) throws Exception {
        return new InstanceSpec(id, Files.createDirectories(stateDir.resolve("sandboxes").resolve(id)), null);
    }

    @Test
    void aRecordedPidThatNowRunsAnotherProcessIsNotAdopted() throws Exception {
        HostProcess other = stranger();
        // the pid of the record, with the start time the agent had: another process has that pid now
        InstanceState recycled = new InstanceState(other.pid(), Map.of(LocalInstance.START_TIME,
                Long.toString(Long.parseLong(other.startTime()) - 1)));
        InstanceGoneException gone = assertThrows(InstanceGoneException.class,
                () -> backend.adopt(spec("recycled"), recycled));
        assertTrue(gone.getMessage().contains("another process"), gone.getMessage());
        assertTrue(stranger.isAlive(), "adoption leaves the process alone");
    }

    @Test
    void theSameAgentIsAdoptedAndAForgedStartTimeIsNot() throws Exception {
        InstanceSpec spec = spec("real");
        SandboxInstance created = backend.create(spec, FixedStorage.of(),
                OperationContext.until(Instant.now().plus(Duration.ofMinutes(1))));
        LocalRuntime nextRevision = new LocalRuntime(stateDir.resolve("agent"));
        try {
            InstanceState state = created.state();
            LocalBackend next = new LocalBackend(nextRevision);
            assertEquals(state, next.adopt(spec, state).state(), "the live agent is adopted");
            InstanceState forged = new InstanceState(state.pid(), Map.of(LocalInstance.START_TIME, "1"));
            assertThrows(InstanceGoneException.class, () -> next.adopt(spec, forged));
            assertThrows(InstanceGoneException.class, () -> next.adopt(spec, new InstanceState(state.pid(), Map.of())),
                    "a record without a start time names no agent");
        } finally {
            nextRevision.close();
            backend.destroy(spec, created.state());
        }
        assertTrue(created.state().pid() > 0);
        assertEquals(Optional.empty(), HostProcess.find(created.state().pid()).filter(p ->
                p.startTime().equals(created.state().data().get(LocalInstance.START_TIME))), "destroy ended the agent");
    }

    @Test
    void destroyWithAnEmptyStateEndsTheAgentThePidFileNames() throws Exception {
        InstanceSpec spec = spec("unrecorded");
        SandboxInstance created = backend.create(spec, FixedStorage.of(),
                OperationContext.until(Instant.now().plus(Duration.ofMinutes(1))));
        HostProcess agent = ((LocalInstance) created).agent();
        // the daemon died before it recorded the state: destroy finds the agent from the sandbox's directory
        backend.destroy(spec, new InstanceState(0, Map.of()));
        assertFalse(agent.isRunning(), "the agent is gone");
        assertFalse(created.alive());
    }

    @Test
    void destroyWithAnEmptyStateSparesAProcessThatTookThePidInTheFile() throws Exception {
        InstanceSpec spec = spec("interrupted");
        HostProcess other = stranger();
        // a create interrupted after the launch wrote its pid file, whose agent died; its pid went to another process
        Files.writeString(spec.dir().resolve(LocalLauncher.PID_FILE), other.pid() + "\n");
        backend.destroy(spec, new InstanceState(0, Map.of()));
        assertTrue(other.isRunning(), "destroy kills only this sandbox's agent");
        assertTrue(Files.notExists(spec.dir().resolve(LocalLauncher.PID_FILE)));
    }

    @Test
    void theStartTimeIsReadPastACommandNameWithSpacesAndParentheses() {
        String stat = "4242 (a) S (b) R 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100 "
                + "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
        assertEquals(Optional.of("987654"), HostProcess.fromStat(stat));
        assertEquals(Optional.empty(), HostProcess.fromStat(stat.replace(") R 1 ", ") Z 1 ")), "a zombie is gone");
    }
}

package io.vivarium.backend.qemu.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.vivarium.api.SandboxStatus;
import io.vivarium.testkit.Bounded;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How a VM's QMP events and run state become its status, against a scripted monitor and a
 * {@code sleep} standing in for QEMU (what this host cannot make a real QEMU do on demand: an
 * accelerator's internal error).
 */
class QemuInstanceTest {

    private static final String STOP = "{\"event\": \"STOP\", \"timestamp\": {\"seconds\": 1, \"microseconds\": 0}}";

    @TempDir
    Path dir;

    private Process qemu;
    private FakeMonitor monitor;
    private QemuInstance vm;
    /** What the monitor answers to query-status. */
    private final AtomicReference<String> runState = new AtomicReference<>("running");
    /** The commands the monitor was sent but for query-status. */
    private final List<String> commands = new CopyOnWriteArrayList<>();

    @BeforeEach
    void startStandIn() throws Exception {
        qemu = new ProcessBuilder("sleep", "600").start();
    }

    @AfterEach
    void stop() throws Exception {
        if (vm != null) {
            vm.close();
        }
        if (monitor != null) {
            monitor.close();
        }
        Bounded.waitFor(qemu.destroyForcibly(), Duration.ofSeconds(30), "the fake qemu ends once killed");
    }

    private QemuInstance watched() throws Exception {
        VmFiles files = VmFiles.of(dir.resolve("vm"), dir.resolve("links"), dir.resolve("scratch"), "x", false);
        files.prepare();
        monitor = new FakeMonitor(files.qmpSocket(), true, (command, id) -> {
            if (!command.equals("query-status") && !command.equals("qmp_capabilities")) {
                commands.add(command);
            }
            return List.of(command.equals("query-status")
                    ? "{\"return\": {\"status\": \"" + runState.get() + "\", \"running\": false}, \"id\": " + id + "}"
                    : "{\"return\": {}, \"id\": " + id + "}");
        });
        QemuProcess process = QemuProcess.find(qemu.pid()).orElseThrow();
        vm = new QemuInstance("x", new VmRecord(process, files, dir, "vivarium", null));
        vm.watch();
        return vm;
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("not within 10 s: " + what);
            }
            Thread.sleep(10);
        }
    }

    @Test
    void aStopOnAnInternalErrorFailsTheVmWithTheReasonAndKillsQemu() throws Exception {
        QemuInstance vm = watched();
        assertEquals(SandboxStatus.RUNNING, vm.status());

        runState.set("internal-error");
        monitor.send(STOP);

        await("the VM has failed", () -> vm.status() == SandboxStatus.FAILED);
        assertTrue(vm.reason().startsWith("QEMU stopped the guest on an internal error of the accelerator; "
                + "the console's last lines: "), vm.reason());
        await("QEMU is killed", () -> !qemu.isAlive());
        assertEquals(vm.reason(), Files.readString(dir.resolve("vm/failure")), "kept for the next daemon");
    }

    @Test
    void aGuestThatPowersOffIsStoppedAndItsQemuKept() throws Exception {
        QemuInstance vm = watched();

        runState.set("shutdown");
        monitor.send("{\"event\": \"SHUTDOWN\", \"data\": {\"guest\": true, \"reason\": \"guest-shutdown\"}, "
                + "\"timestamp\": {\"seconds\": 1, \"microseconds\": 0}}");

        await("the VM is stopped", () -> vm.status() == SandboxStatus.STOPPED);
        assertEquals("the guest powered off", vm.reason());
        assertTrue(qemu.isAlive(), "a stopped VM's QEMU stays until the sandbox is deleted");
    }

    @Test
    void aVmFoundPanickedWhenWatchingStartsFailsAtOnce() throws Exception {
        runState.set("guest-panicked");

        QemuInstance vm = watched();

        assertEquals(SandboxStatus.FAILED, vm.status());
        assertTrue(vm.reason().startsWith("the guest kernel panicked"), vm.reason());
        await("QEMU is killed", () -> !qemu.isAlive());
    }

    @Test
    void aPauseIsQmpStopAndContAndAPausedQemuIsFoundPausedByTheNextAdopter() throws Exception {
        QemuInstance vm = watched();
        QemuSettings settings = new QemuSettings(Path.of("/bin/true"), dir, "default", 256, 1, Duration.ofSeconds(5),
                dir.resolve("links"), dir.resolve("scratch"));
        try (QemuRuntime runtime = new QemuRuntime(settings, Accelerator.detect(dir.resolve("none"), dir.resolve("none")))) {
            QemuPause pause = new QemuPause(runtime);
            pause.pause(vm);
            assertEquals(SandboxStatus.PAUSED, vm.status());
            assertTrue(vm.alive(), "a paused VM is alive");
            pause.resume(vm);
            assertEquals(SandboxStatus.RUNNING, vm.status());
            assertEquals(List.of("stop", "cont"), commands);

            // a cont from elsewhere (a restore) resumes it too
            pause.pause(vm);
        }
        monitor.send("{\"event\": \"RESUME\", \"timestamp\": {\"seconds\": 1, \"microseconds\": 0}}");
        await("the VM runs", () -> vm.status() == SandboxStatus.RUNNING);

        vm.close();
        monitor.close();
        Files.delete(dir.resolve("vm/qmp.sock"));
        runState.set("paused");
        assertEquals(SandboxStatus.PAUSED, watched().status(), "adopted paused");
    }
}

package io.vivarium.backend.qemu.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.vivarium.api.ApiException;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.SandboxStatus;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.SandboxInstance;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the kit does not cover: failed boots, and how a VM that stops or dies is reported. */
class QemuLifecycleTest {

    private static final Duration PATIENCE = Duration.ofSeconds(30);

    @TempDir
    Path state;

    private QemuHost.Revision backend;
    private final List<InstanceSpec> made = new ArrayList<>();

    @BeforeEach
    void needsQemuAndImage() {
        QemuHost.assumeImage("default");
        backend = QemuHost.revision(QemuHost.settings());
    }

    @AfterEach
    void destroyAll() {
        for (InstanceSpec spec : made) {
            backend.backend().destroy(spec, new InstanceState(0, Map.of()));
        }
        backend.close();
    }

    private InstanceSpec spec(String id) throws IOException {
        InstanceSpec spec = new InstanceSpec(id + "-" + ProcessHandle.current().pid(),
                Files.createDirectories(state.resolve(id)), null);
        made.add(spec);
        return spec;
    }

    private QemuInstance create(QemuHost.Revision on, String id) throws IOException {
        return on.create(spec(id));
    }

    private static ExecResult exec(SandboxInstance vm, String... argv) {
        return vm.channel().exec(new ExecRequest(List.of(argv), 30, Map.of("PATH", "/usr/bin:/bin:/usr/sbin:/sbin"),
                "/work", null, 1 << 20));
    }

    /** QEMU processes whose command line names {@code dir} (or the link to it). */
    private static List<ProcessHandle> qemusOf(InstanceSpec spec) {
        return ProcessHandle.allProcesses().filter(h -> h.info().arguments()
                .map(args -> Arrays.stream(args).anyMatch(a -> a.contains("/" + spec.id() + "/")))
                .orElse(false)).toList();
    }

    private static void assertNothingLeft(InstanceSpec spec) throws IOException {
        assertEquals(List.of(), qemusOf(spec), "no QEMU of " + spec.id() + " is left");
        try (Stream<Path> left = Files.list(spec.dir())) {
            assertEquals(List.of(), left.toList(), "no file of " + spec.id() + " is left");
        }
        assertFalse(Files.exists(QemuSettings.defaultLinkDir().resolve(spec.id()), java.nio.file.LinkOption.NOFOLLOW_LINKS),
                "no socket link is left");
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("not within " + PATIENCE.toSeconds() + " s: " + what);
            }
            Thread.sleep(20);
        }
    }

    @Test
    void aKernelThatDoesNotBootFailsTheCreateAndLeavesNothing() throws IOException {
        Path image = state.resolve("images/default");
        Files.createDirectories(image);
        Path good = QemuHost.settings().imageDir().resolve("default");
        for (String file : List.of(GuestImage.INITRAMFS, GuestImage.WORKSPACE, GuestImage.DESCRIPTION)) {
            Files.createSymbolicLink(image.resolve(file), good.resolve(file).toRealPath());
        }
        Files.writeString(image.resolve(GuestImage.KERNEL), "not a kernel");
        InstanceSpec spec = spec("garbage");
        ApiException e;
        try (QemuHost.Revision broken = QemuHost.revision(QemuHost.settings().withImageDir(state.resolve("images"))
                .withBootTimeout(Duration.ofSeconds(20)))) {
            e = assertThrows(ApiException.class, () -> broken.create(spec));
        }

        assertEquals(500, e.status());
        assertTrue(e.getMessage().contains("failed to start"), e.getMessage());
        assertNothingLeft(spec);
    }

    @Test
    void aBootPastItsTimeoutFailsWithTheConsoleAndLeavesNothing() throws IOException {
        InstanceSpec spec = spec("impatient");
        ApiException e;
        try (QemuHost.Revision impatient = QemuHost.revision(QemuHost.settings().withBootTimeout(Duration.ofSeconds(1)))) {
            e = assertThrows(ApiException.class, () -> impatient.create(spec));
        }

        assertTrue(e.getMessage().contains("the guest agent did not answer within 1 s"), e.getMessage());
        assertTrue(e.getMessage().contains("the console's last lines: "), e.getMessage());
        assertNothingLeft(spec);
    }

    @Test
    void aGuestThatPowersOffIsStoppedNotFailedRunsAgainFromACheckpointAndDeleteRemovesIt() throws Exception {
        QemuInstance vm = create(backend, "poweroff");
        InstanceSpec spec = made.get(made.size() - 1);
        OperationContext context = OperationContext.until(Instant.now().plus(PATIENCE));
        backend.checkpoints().create(vm, "up", context);
        exec(vm, "/bin/sh", "-c", "(sleep 0.3; poweroff -f) >/dev/null 2>&1 </dev/null &");

        await("the VM is stopped", () -> vm.status() == SandboxStatus.STOPPED);
        assertEquals("the guest powered off", vm.reason());
        assertFalse(vm.alive());
        assertEquals(1, qemusOf(spec).size(), "a stopped VM keeps its QEMU (and disk) until it is deleted");

        assertEquals(vm, backend.checkpoints().restore(vm, "up", context), "restored in place");
        assertEquals(SandboxStatus.RUNNING, vm.status());
        assertEquals("back\n", exec(vm, "/bin/echo", "back").stdout(), "a stopped VM runs again from a checkpoint");

        backend.backend().destroy(spec, vm.state());
        assertNothingLeft(spec);
    }

    @Test
    void aStoppedVmStaysStoppedForTheNextAdopterAndStartsAgainWithItsDisk() throws Exception {
        QemuInstance vm = create(backend, "power");
        InstanceSpec spec = made.get(made.size() - 1);
        OperationContext context = OperationContext.until(Instant.now().plus(PATIENCE));
        exec(vm, "/bin/sh", "-c", "echo kept > /work/kept");
        long pid = vm.state().pid();

        assertEquals(vm, backend.power().stop(vm, context));
        assertEquals(SandboxStatus.STOPPED, vm.status());
        backend.close();
        backend = QemuHost.revision(QemuHost.settings());
        QemuInstance adopted = (QemuInstance) backend.backend().adopt(spec, vm.state());
        assertEquals(SandboxStatus.STOPPED, adopted.status(), "a daemon that adopts it finds it stopped");

        SandboxInstance started = backend.power().start(adopted, context);
        assertEquals(SandboxStatus.RUNNING, started.status());
        assertEquals("kept\n", exec(started, "/bin/cat", "/work/kept").stdout(), "booted again from its disk");
        if (Files.isRegularFile(adopted.record().image().resolve(GuestImage.LOADER))) {
            // its kernel is written into a new QEMU's RAM (QemuPower.start)
            assertNotEquals(pid, started.state().pid(), "in a new QEMU");
            assertFalse(adopted.record().process().isRunning(), "the old QEMU is gone");
        } else {
            assertEquals(adopted, started);
            assertEquals(pid, started.state().pid(), "in the same QEMU");
        }
    }

    @Test
    void aStartWhoseBootInANewQemuFailsLeavesTheVmStoppedForTheNextAdopterAndAStartAgainRunsIt() throws Exception {
        QemuInstance vm = create(backend, "again");
        InstanceSpec spec = made.get(made.size() - 1);
        assertTrue(Files.isRegularFile(vm.record().image().resolve(GuestImage.LOADER)),
                "every image build-image.sh builds has the PVH loader, which a stopped VM's next QEMU boots");
        OperationContext context = OperationContext.until(Instant.now().plus(PATIENCE));
        exec(vm, "/bin/sh", "-c", "echo kept > /work/kept");
        assertEquals(vm, backend.power().stop(vm, context));
        backend.close();
        // the next start cannot wait for any guest: its boot fails once the old QEMU is gone
        backend = QemuHost.revision(QemuHost.settings().withBootTimeout(Duration.ofMillis(100)));
        QemuInstance adopted = (QemuInstance) backend.backend().adopt(spec, vm.state());
        QemuHost.Revision impatient = backend;

        ApiException e = assertThrows(ApiException.class, () -> impatient.power().start(adopted, context));

        assertTrue(e.getMessage().contains("stays stopped with its disk"), e.getMessage());
        assertEquals(SandboxStatus.STOPPED, adopted.status());
        assertEquals(List.of(), qemusOf(spec), "neither the old QEMU nor the one that did not boot runs");
        assertEquals(409, assertThrows(ApiException.class,
                () -> impatient.checkpoints().restore(adopted, "any", context)).status(), "no checkpoints without a QEMU");
        backend.close();
        backend = QemuHost.revision(QemuHost.settings());
        QemuInstance again = (QemuInstance) backend.backend().adopt(spec, adopted.state());
        assertEquals(SandboxStatus.STOPPED, again.status(), "a daemon that adopts it finds it stopped, not failed");
        assertTrue(again.reason().contains("did not finish"), again.reason());

        SandboxInstance started = backend.power().start(again, context);
        assertEquals(SandboxStatus.RUNNING, started.status());
        assertEquals("kept\n", exec(started, "/bin/cat", "/work/kept").stdout(), "booted again from its disk");

        // a daemon stopped before core recorded the new QEMU: the next one adopts the record core has
        backend.close();
        backend = QemuHost.revision(QemuHost.settings());
        QemuInstance unrecorded = (QemuInstance) backend.backend().adopt(spec, again.state());
        assertEquals(SandboxStatus.STOPPED, unrecorded.status(), "stopped, as core's record says");
        assertEquals(List.of(), qemusOf(spec), "the QEMU no record names is stopped");
    }

    @Test
    void aPanickingGuestFailsWithTheReasonAndItsQemuIsKilled() throws Exception {
        SandboxInstance vm = create(backend, "panic");
        InstanceSpec spec = made.get(made.size() - 1);
        exec(vm, "/bin/sh", "-c", "(sleep 0.3; echo c > /proc/sysrq-trigger) >/dev/null 2>&1 </dev/null &");

        await("the VM has failed", () -> vm.status() == SandboxStatus.FAILED);
        // pvpanic (loaded by /init) reports it: not the reset that panic=-1 would be without it
        assertTrue(vm.reason().startsWith("the guest kernel panicked"), vm.reason());
        assertTrue(vm.reason().contains("the console's last lines: "), vm.reason());
        await("its QEMU is gone", () -> qemusOf(spec).isEmpty());
        assertTrue(Files.readString(spec.dir().resolve("failure")).startsWith("the guest kernel panicked"),
                "the reason is kept for the next daemon");
    }

    @Test
    void aQemuThatEndsSaysWhyInItsLogAndTheReasonQuotesIt() throws Exception {
        SandboxInstance vm = create(backend, "terminated");
        InstanceSpec spec = made.get(made.size() - 1);
        long pid = vm.state().pid();
        ProcessHandle.of(pid).ifPresent(ProcessHandle::destroy);

        await("its QEMU is gone", () -> qemusOf(spec).isEmpty());
        assertEquals(SandboxStatus.FAILED, vm.status());
        // QEMU's stderr after -daemonize, which would be /dev/null without -D
        assertTrue(Files.readString(spec.dir().resolve("qemu.log")).contains("terminating on signal 15"),
                Files.readString(spec.dir().resolve("qemu.log")));
        assertTrue(vm.reason().matches("(?s).*its last words: .*terminating on signal 15.*"), vm.reason());
    }

    @Test
    void aQemuKilledFromOutsideIsFailedAndTheNextBackendSaysSo() throws Exception {
        SandboxInstance vm = create(backend, "killed");
        InstanceSpec spec = made.get(made.size() - 1);
        InstanceState persisted = vm.state();
        ((QemuInstance) vm).record().process().kill(Duration.ofSeconds(5));

        assertEquals(SandboxStatus.FAILED, vm.status());
        assertTrue(vm.reason().startsWith("QEMU (pid " + persisted.pid() + ") exited"), vm.reason());
        backend.close();
        backend = QemuHost.revision(QemuHost.settings());
        var gone = assertThrows(io.vivarium.api.spi.InstanceGoneException.class,
                () -> backend.backend().adopt(spec, persisted));
        assertTrue(gone.getMessage().startsWith("QEMU (pid " + persisted.pid() + ") exited"), gone.getMessage());
    }
}

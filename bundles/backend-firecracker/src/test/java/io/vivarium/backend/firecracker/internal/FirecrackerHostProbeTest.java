package io.vivarium.backend.firecracker.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.api.spi.Availability;
import io.vivarium.kit.vmm.HostKvm;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What {@code GET /v1/backends} says of Firecracker: unavailable with the reason, until everything is there. */
class FirecrackerHostProbeTest {
    private static final HostKvm KVM = new HostKvm(true, "the CPU has vmx and /dev/kvm opens");

    @TempDir
    Path dir;

    @Test
    void everyMissingPieceIsNamedUntilNoneIs() throws IOException {
        FirecrackerSettings settings = settings();
        HostKvm paravirtual = new HostKvm(false, "the CPU flags show no vmx or svm, so /dev/kvm (if any) cannot run a stock guest");
        String[] all = new FirecrackerHostProbe(settings, paravirtual, null).availability().reason().split("; ");
        assertEquals(3, all.length, String.join("\n", all));
        assertEquals("Firecracker needs a KVM that runs guests, and this host has none: " + paravirtual.reason(), all[0]);
        assertTrue(all[1].startsWith(settings.firecracker() + " is missing (Firecracker is in no Debian release)"), all[1]);
        assertTrue(all[2].startsWith("no guest image default in " + settings.imageDir()), all[2]);

        executable(settings.firecracker());
        FakeImages.write(settings.imageDir(), "default");
        assertEquals(new FirecrackerHostProbe(settings, paravirtual, null).availability().reason(), all[0], "KVM alone");
        assertTrue(new FirecrackerHostProbe(settings, KVM, null).availability().available());
        assertEquals("cannot write the agent", new FirecrackerHostProbe(settings, KVM, "cannot write the agent")
                .availability().reason());
    }

    @Test
    void anImageWithTheStockQemuGaCannotServe() throws IOException {
        FirecrackerSettings settings = settings();
        executable(settings.firecracker());
        Path image = FakeImages.write(settings.imageDir(), "default");
        Files.writeString(image.resolve("image.json"), "{\"agent\": \"qemu-ga\", \"cmdline\": \"console=ttyS0\"}");
        assertTrue(new FirecrackerHostProbe(settings, KVM, null).availability().reason().contains("cannot listen on vsock"));
    }

    @Test
    void detailsNameTheApiDocumentTheBackendIsHeldTo() throws IOException {
        var details = new FirecrackerHostProbe(settings(), KVM, null).details();
        assertEquals("Firecracker API " + FirecrackerApi.TARGET + " (the document this backend is written and "
                + "contract-tested against)", details.get("api"));
        assertEquals("kvm (" + KVM.reason() + ")", details.get("accelerator"));
    }

    @Test
    void theGuestIsToldToServeItsAgentOnVsock() {
        assertEquals("console=ttyS0 panic=-1 quiet reboot=k pci=off vivarium.channel=vsock:1024",
                FirecrackerLauncher.bootArgs(new FirecrackerImage(dir, "console=ttyS0 panic=-1 quiet")));
    }

    private FirecrackerSettings settings() throws IOException {
        return new FirecrackerSettings(dir.resolve("firecracker"), Files.createDirectories(dir.resolve("images")),
                "default", 256, 1, 64, Duration.ofSeconds(5), dir.resolve("s"));
    }

    private static void executable(Path file) throws IOException {
        Files.writeString(file, "#!/bin/sh\n");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxr-xr-x"));
    }
}

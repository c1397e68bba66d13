package io.vivarium.backend.firecracker.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.kit.vmm.HostKvm;
import io.vivarium.kit.vmm.VmmGuestImage;
import io.vivarium.kit.vmm.VmmSettings;
import io.vivarium.testkit.vmm.FakeVmmProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What {@code GET /v1/backends} says of Firecracker, and what its guests are told. */
class FirecrackerRuntimeTest {
    private static final HostKvm KVM = new HostKvm(true, "the CPU has vmx and /dev/kvm opens");

    @TempDir
    Path dir;

    @Test
    void everyMissingPieceIsNamedUntilNoneIs() throws IOException {
        VmmSettings settings = settings();
        HostKvm paravirtual = new HostKvm(false, "the CPU flags show no vmx or svm, so /dev/kvm (if any) cannot run a stock guest");
        String[] all = runtime(settings, paravirtual).vmm().probe().availability().reason().split("; ");
        assertEquals(3, all.length, String.join("\n", all));
        assertEquals("Firecracker needs a KVM that runs guests, and this host has none: " + paravirtual.reason(), all[0]);
        assertTrue(all[1].startsWith(settings.binary() + " is missing (Firecracker is in no Debian release)"), all[1]);
        assertTrue(all[2].startsWith("no guest image default in " + settings.imageDir()), all[2]);

        Files.writeString(settings.binary(), "#!/bin/sh\n");
        Files.setPosixFilePermissions(settings.binary(), PosixFilePermissions.fromString("rwxr-xr-x"));
        FakeVmmProcess.image(settings.imageDir(), "default");
        assertEquals(all[0], runtime(settings, paravirtual).vmm().probe().availability().reason(), "KVM alone");
        assertTrue(runtime(settings, KVM).vmm().probe().availability().available());
    }

    @Test
    void anImageWithTheStockQemuGaCannotServe() throws IOException {
        VmmSettings settings = settings();
        Path image = FakeVmmProcess.image(settings.imageDir(), "default");
        Files.writeString(image.resolve("image.json"), "{\"agent\": \"qemu-ga\", \"cmdline\": \"console=ttyS0\"}");
        assertTrue(runtime(settings, KVM).vmm().probe().availability().reason().contains("cannot listen on vsock"));
    }

    @Test
    void detailsNameTheApiDocumentTheBackendIsHeldTo() throws IOException {
        var details = runtime(settings(), KVM).vmm().details();
        assertEquals("Firecracker API " + FirecrackerApi.TARGET + " (the document this backend is written and "
                + "contract-tested against)", details.get("api"));
        assertEquals("kvm (" + KVM.reason() + ")", details.get("accelerator"));
    }

    @Test
    void detailsSayWhatVersionTheExecutableIs() throws IOException {
        VmmSettings settings = settings();
        assertTrue(runtime(settings, KVM).vmm().details().get("version") == null, "no executable, no version");
        Files.writeString(settings.binary(), "#!/bin/sh\n[ \"$1\" = --version ] && printf 'Firecracker v1.13.1\\n\\nSupported snapshot data format versions: v5.0.0\\n'\n");
        Files.setPosixFilePermissions(settings.binary(), PosixFilePermissions.fromString("rwxr-xr-x"));
        assertEquals("Firecracker v1.13.1", runtime(settings, KVM).vmm().details().get("version"));
    }

    @Test
    void theGuestIsToldToServeItsAgentOnVsock() throws IOException {
        assertEquals("console=ttyS0 panic=-1 quiet reboot=k pci=off vivarium.channel=vsock:1024",
                runtime(settings(), KVM).vmm().launcher().cmdline(new VmmGuestImage(dir, "console=ttyS0 panic=-1 quiet")));
    }

    private FirecrackerRuntime runtime(VmmSettings settings, HostKvm kvm) {
        return new FirecrackerRuntime(settings, kvm, dir.resolve("agent"));
    }

    private VmmSettings settings() throws IOException {
        return new VmmSettings(dir.resolve("firecracker"), Files.createDirectories(dir.resolve("images")),
                "default", 256, 1, 64, Duration.ofSeconds(5), dir.resolve("s"));
    }
}

package io.vivarium.backend.qemu.internal;

import java.nio.file.Files;
import java.util.LinkedHashMap;
import java.util.Map;

import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.SandboxBackend;

/**
 * Whether VMs can run on this host and how they run there: QEMU's executable and the default guest
 * image (a storage strategy for VM disks is core's to check, from {@link QemuBackend#storedKinds()}),
 * and the details {@code GET /v1/backends} shows: the accelerator and why, the machine, what isolates
 * a VM, the agent, where the images are.
 */
final class QemuHostProbe {

    private final QemuSettings settings;
    private final Accelerator accelerator;

    QemuHostProbe(QemuSettings settings, Accelerator accelerator) {
        this.settings = settings;
        this.accelerator = accelerator;
    }

    /** Checked on every call, so installing QEMU or building the image makes the backend available. */
    Availability availability() {
        if (!Files.isExecutable(settings.qemu())) {
            return Availability.no(settings.qemu() + " is missing: apt-get install qemu-system-x86");
        }
        try {
            GuestImage.load(settings.imageDir(), settings.defaultImage());
        } catch (GuestImage.MissingImageException e) {
            return Availability.no(e.getMessage());
        }
        return Availability.yes();
    }

    Map<String, String> details() {
        Map<String, String> d = new LinkedHashMap<>();
        d.put(SandboxBackend.DETAIL_ACCELERATOR, accelerator.reason());
        d.put(SandboxBackend.DETAIL_PLATFORM, "q35");
        d.put(SandboxBackend.DETAIL_ISOLATION, "a QEMU virtual machine per sandbox, without a network");
        d.put(SandboxBackend.DETAIL_AGENT, "the image's guest agent on a virtio-serial port");
        d.put("images", settings.imageDir().toString());
        return d;
    }
}

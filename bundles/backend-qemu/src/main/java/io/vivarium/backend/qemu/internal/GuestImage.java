package io.vivarium.backend.qemu.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Optional;

import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.StoredArtifact;

/**
 * A built guest image (guest-agent/image, IMAGE-CONTRACT): an immutable directory with
 * {@code kernel}, {@code initramfs.cpio.gz}, {@code workspace.qcow2} and {@code image.json}, and
 * since 2 Dec 2026 {@code pvh-loader}.
 *
 * @param dir the image's own directory (the content-addressed one, never the {@code NAME} link,
 *        so that a rebuild never moves a running VM's backing file)
 * @param cmdline the kernel command line from {@code image.json}
 * @param agent {@code vivarium} or {@code qemu-ga}
 */
record GuestImage(Path dir, String cmdline, String agent) {

    static final String KERNEL = "kernel";
    /**
     * What QEMU boots in place of {@link #KERNEL} when the image has it (guest-agent/boot/pvh-loader.c):
     * the backend writes the vmlinux into the guest's RAM file itself ({@link GuestKernel}), so a
     * system reset does not write it back into guest RAM as it does an ELF {@code -kernel}'s segments.
     */
    static final String LOADER = "pvh-loader-ram";
    static final String INITRAMFS = "initramfs.cpio.gz";
    static final String WORKSPACE = "workspace.qcow2";
    static final String DESCRIPTION = "image.json";
    /** The virtio-serial port name the agent listens on. */
    static final String AGENT_PORT = "org.qemu.guest_agent.0";

    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * The image {@code name} in {@code imageDir}; a {@link MissingImageException} that says how to
     * build it if there is none, or if it lacks a file.
     */
    static GuestImage load(Path imageDir, String name) throws MissingImageException {
        Path dir;
        try {
            dir = imageDir.resolve(name).toRealPath();
        } catch (NoSuchFileException e) {
            throw new MissingImageException("no guest image " + name + " in " + imageDir + ": build it with "
                    + "guest-agent/image/build-image.sh --out " + imageDir + " --variant " + name);
        } catch (IOException e) {
            throw new MissingImageException("cannot read the guest image " + name + " in " + imageDir + ": " + e);
        }
        for (String file : new String[] {KERNEL, INITRAMFS, WORKSPACE, DESCRIPTION}) {
            if (!Files.isRegularFile(dir.resolve(file))) {
                throw new MissingImageException("the guest image " + dir + " lacks " + file + "; rebuild it");
            }
        }
        try {
            JsonNode description = JSON.readTree(dir.resolve(DESCRIPTION).toFile());
            String cmdline = description.path("cmdline").asText("");
            String agent = description.path("agent").asText("");
            if (cmdline.isBlank() || agent.isBlank()) {
                throw new MissingImageException(dir.resolve(DESCRIPTION) + " lacks \"cmdline\" or \"agent\"; rebuild it");
            }
            return new GuestImage(dir, cmdline, agent);
        } catch (IOException e) {
            throw new MissingImageException("cannot read " + dir.resolve(DESCRIPTION) + ": " + e.getMessage());
        }
    }

    /** Whether its agent is ours ({@code vivarium-agent}), which runs commands as any user, not the stock qemu-ga. */
    boolean hasOurAgent() {
        return "vivarium".equals(agent);
    }

    Path kernel() {
        return dir.resolve(KERNEL);
    }

    /**
     * The PVH loader, if this image has one; a VM booted with it needs its {@link GuestKernel}
     * placed in its RAM file first. Images built before it boot {@link #kernel()} directly.
     */
    Optional<Path> loader() {
        Path loader = dir.resolve(LOADER);
        return Files.isRegularFile(loader) ? Optional.of(loader) : Optional.empty();
    }

    Path initramfs() {
        return dir.resolve(INITRAMFS);
    }

    Path workspace() {
        return dir.resolve(WORKSPACE);
    }

    /** The workspace as a stored disk that every VM of this image gets an overlay on; it never changes. */
    StoredArtifact storedWorkspace() {
        return new StoredArtifact(ArtifactKind.DISK, workspace(), "flat", 0, null, null, 0);
    }

    /** No usable image: what is missing and how to make it. */
    static final class MissingImageException extends Exception {
        private static final long serialVersionUID = 1L;

        MissingImageException(String message) {
            super(message);
        }
    }
}

package io.vivarium.kit.vmm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * What a VMM boots of a built guest image (guest-agent/image): its {@code kernel} (an ELF
 * vmlinux), its {@code initramfs.cpio.gz}, and the kernel command line its {@code image.json}
 * gives. The image's agent must be ours: it alone listens on vsock.
 *
 * @param dir the image's own, content-addressed directory (never the {@code NAME} link)
 */
public record VmmGuestImage(Path dir, String cmdline) {

    private static final ObjectMapper JSON = new ObjectMapper();

    /** The image {@code name} in {@code imageDir}, or an {@link IOException} that says how to get it. */
    public static VmmGuestImage load(Path imageDir, String name) throws IOException {
        Path dir;
        try {
            dir = imageDir.resolve(name).toRealPath();
        } catch (NoSuchFileException e) {
            throw new IOException("no guest image " + name + " in " + imageDir + ": build it with "
                    + "guest-agent/image/build-image.sh --out " + imageDir + " --variant " + name);
        }
        for (String file : new String[] {"kernel", "initramfs.cpio.gz", "image.json"}) {
            if (!Files.isRegularFile(dir.resolve(file))) {
                throw new IOException("the guest image " + dir + " lacks " + file + "; rebuild it");
            }
        }
        JsonNode description = JSON.readTree(dir.resolve("image.json").toFile());
        if (!"vivarium".equals(description.path("agent").asText())) {
            throw new IOException("the guest image " + dir + " has the agent '" + description.path("agent").asText()
                    + "', which cannot listen on vsock: a guest reached over vsock needs an image with vivarium-agent");
        }
        return new VmmGuestImage(dir, description.path("cmdline").asText(""));
    }

    public Path kernel() {
        return dir.resolve("kernel");
    }

    public Path initramfs() {
        return dir.resolve("initramfs.cpio.gz");
    }
}

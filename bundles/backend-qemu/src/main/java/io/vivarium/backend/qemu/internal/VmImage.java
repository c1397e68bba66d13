package io.vivarium.backend.qemu.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.StoredArtifact;
import io.vivarium.common.files.AtomicFiles;

/**
 * A VM snapshot's description, {@value #MANIFEST} in its image directory beside the three files
 * it names: {@value #RAM} (guest RAM as a flat file, or whatever the MEMORY strategy stored for it),
 * {@value #DISK} (the disk as the DISK strategy stored it) and {@value #DEVICES} (device state: a
 * migration stream or a device-only stream, {@link QemuCommand.Incoming}). A child is launched with
 * the same machine (memory, vCPUs, guest image) as the VM captured, which the stream needs.
 * Artifacts of the image itself are recorded relative to its directory (it is written in staging
 * and renamed); a parent artifact (another snapshot's) with its absolute path.
 */
record VmImage(int memoryMib, int vcpus, Path guestImage, String agent, QemuCommand.Incoming incoming,
        StoredArtifact memory, StoredArtifact disk) {

    static final String MANIFEST = "vm.json";
    static final String RAM = "memory.ram";
    static final String DISK = "disk.qcow2";
    static final String DEVICES = "devices.state";

    private static final ObjectMapper JSON = new ObjectMapper();

    void write(Path imageDir) throws IOException {
        ObjectNode root = JSON.createObjectNode()
                .put("schema", 1)
                .put("memory_mib", memoryMib)
                .put("vcpus", vcpus)
                .put("guest_image", guestImage.toString())
                .put("agent", agent)
                .put("incoming", incoming.name());
        root.set("memory", artifact(memory, imageDir));
        root.set("disk", artifact(disk, imageDir));
        AtomicFiles.write(imageDir.resolve(MANIFEST), JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(root));
    }

    /** Reads the description in {@code imageDir}; its own artifacts resolved there. */
    static VmImage read(Path imageDir) throws IOException {
        JsonNode root = JSON.readTree(imageDir.resolve(MANIFEST).toFile());
        if (root == null || root.path("schema").asInt() != 1) {
            throw new IOException(imageDir.resolve(MANIFEST) + " is not a VM image description of schema 1");
        }
        return new VmImage(root.path("memory_mib").asInt(), root.path("vcpus").asInt(),
                Path.of(root.path("guest_image").asText()), root.path("agent").asText(),
                QemuCommand.Incoming.valueOf(root.path("incoming").asText()),
                artifact(root.path("memory"), imageDir), artifact(root.path("disk"), imageDir));
    }

    /** The first file a fork of the image in {@code imageDir} needs that is missing, or null. */
    static String missing(Path imageDir) {
        for (String file : new String[] {MANIFEST, RAM, DISK, DEVICES}) {
            if (!Files.isRegularFile(imageDir.resolve(file))) {
                return "the VM snapshot's " + imageDir.resolve(file) + " is missing";
            }
        }
        try {
            VmImage image = read(imageDir);
            if (!Files.isDirectory(image.guestImage())) {
                return "the guest image " + image.guestImage() + " the snapshot was taken from is missing (pruned?)";
            }
            for (StoredArtifact own : new StoredArtifact[] {image.memory(), image.disk()}) {
                for (StoredArtifact a = own.parent(); a != null; a = a.parent()) {
                    if (!Files.exists(a.path())) {
                        return "the " + own.kind().name().toLowerCase(Locale.ROOT) + " image "
                                + a.path() + " this snapshot is stored on is missing";
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            return "cannot read " + imageDir.resolve(MANIFEST) + ": " + e.getMessage();
        }
        return null;
    }

    private static ObjectNode artifact(StoredArtifact a, Path imageDir) {
        ObjectNode node = JSON.createObjectNode()
                .put("kind", a.kind().name())
                .put("path", a.path().startsWith(imageDir) ? imageDir.relativize(a.path()).toString() : a.path().toString())
                .put("mode", a.mode())
                .put("bytes_written", a.bytesWritten())
                .put("content_hash", a.contentHash())
                .put("depth", a.depth());
        if (a.parent() != null) {
            node.set("parent", artifact(a.parent(), Path.of("/nonexistent-image-dir")));
        }
        return node;
    }

    private static StoredArtifact artifact(JsonNode node, Path imageDir) throws IOException {
        if (!node.isObject()) {
            throw new IOException("an artifact of " + imageDir.resolve(MANIFEST) + " is not described");
        }
        StoredArtifact parent = node.has("parent") ? artifact(node.get("parent"), imageDir) : null;
        return new StoredArtifact(ArtifactKind.valueOf(node.path("kind").asText()),
                imageDir.resolve(node.path("path").asText()), node.path("mode").asText(null),
                node.path("bytes_written").asLong(), node.path("content_hash").isTextual()
                        ? node.path("content_hash").asText() : null,
                parent, node.path("depth").asInt());
    }
}

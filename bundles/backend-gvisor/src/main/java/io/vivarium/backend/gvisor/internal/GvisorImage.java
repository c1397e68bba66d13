package io.vivarium.backend.gvisor.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.vivarium.api.ApiException;
import io.vivarium.common.files.AtomicFiles;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * What a child of a gVisor snapshot must start with to be restored from its checkpoint: the root
 * filesystem the checkpointed container had (a built root filesystem by its real path, so that a
 * rebuild beside it does not change it under the children; or the host's /usr layout) and its
 * memory limit. Written as {@value #MANIFEST} beside the artifacts: the checkpoint's files
 * ({@value #MEMORY}{@code /checkpoint.img} and its memory pages, {@link #checkpointFiles}) and the
 * workspace tree ({@value #WORK}).
 *
 * @param rootfs the root filesystem, or empty for the host's /usr layout
 * @param memoryLimitMib the memory limit, or null for none
 * @param runsc the version line of the runsc that wrote the checkpoint (runsc restores only its own
 *        checkpoints), or empty for an image written before it was recorded
 */
record GvisorImage(Optional<Path> rootfs, Integer memoryLimitMib, String runsc) {

    static final String MANIFEST = "gvisor-image.json";
    static final String MEMORY = "memory";
    /** What {@code runsc checkpoint --compression none} writes: the state, the memory pages and their index. */
    static final List<String> CHECKPOINT_FILES = List.of("checkpoint.img", "pages.img", "pages_meta.img");
    static final String WORK = "work";
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The files of a runsc checkpoint in {@code dir}, by name. */
    static List<Path> checkpointFiles(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(Files::isRegularFile).sorted().toList();
        }
    }

    /** A 409 unless this image's checkpoint was written by the runsc of {@code version}. */
    void requireRunsc(String version) {
        if (!runsc.equals(version)) {
            throw ApiException.conflict("this gVisor snapshot was taken with "
                    + (runsc.isEmpty() ? "an older runsc" : runsc) + " and runsc restores only its own checkpoints; this "
                    + "daemon runs " + version + ": take the snapshot again");
        }
    }

    void write(Path imageDir) throws IOException {
        ObjectNode o = JSON.createObjectNode();
        o.put("rootfs", rootfs.map(Path::toString).orElse(GvisorSettings.HOST_ROOTFS));
        if (memoryLimitMib != null) {
            o.put("memory_limit_mib", memoryLimitMib);
        }
        o.put("runsc", runsc);
        AtomicFiles.write(imageDir.resolve(MANIFEST), JSON.writeValueAsBytes(o));
    }

    static GvisorImage read(Path imageDir) throws IOException {
        JsonNode o = JSON.readTree(imageDir.resolve(MANIFEST).toFile());
        String rootfs = o.path("rootfs").asText(GvisorSettings.HOST_ROOTFS);
        return new GvisorImage(rootfs.equals(GvisorSettings.HOST_ROOTFS) ? Optional.empty() : Optional.of(Path.of(rootfs)),
                o.has("memory_limit_mib") ? o.get("memory_limit_mib").asInt() : null, o.path("runsc").asText(""));
    }

    /** The first thing a fork from {@code imageDir} needs that is missing, or null. */
    static String missing(Path imageDir) {
        if (!Files.isRegularFile(imageDir.resolve(MANIFEST))) {
            return "the gVisor snapshot's description " + imageDir.resolve(MANIFEST) + " is missing";
        }
        for (String file : CHECKPOINT_FILES) {
            if (!Files.isRegularFile(imageDir.resolve(MEMORY).resolve(file))) {
                return "the gVisor checkpoint's " + imageDir.resolve(MEMORY).resolve(file) + " is missing";
            }
        }
        if (!Files.isDirectory(imageDir.resolve(WORK))) {
            return "the workspace tree " + imageDir.resolve(WORK) + " is missing";
        }
        try {
            Optional<Path> rootfs = read(imageDir).rootfs();
            if (rootfs.isPresent() && !Files.isDirectory(rootfs.get())) {
                return "the root filesystem " + rootfs.get() + " the snapshot was taken on is gone";
            }
        } catch (IOException e) {
            return "the gVisor snapshot's description " + imageDir.resolve(MANIFEST) + " is unreadable: " + e.getMessage();
        }
        return null;
    }
}

package io.vivarium.common.files;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.vivarium.api.ApiException;
import io.vivarium.api.CheckpointInfo;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToLongFunction;
import java.util.stream.Stream;

/**
 * One sandbox's checkpoints as directories, as the backends that keep them in files do (gVisor,
 * the VMM backends): {@code TAG/} with what the backend saved and {@value #INFO} (when it was taken,
 * its mode, and what the backend adds), staged as {@code .TAG.staging} and renamed into place last,
 * so a daemon killed meanwhile leaves the whole checkpoint or none (a listing skips what starts
 * with a dot). The errors are the API's: 409 for a tag taken, 404 for one there is not.
 */
public final class CheckpointDirectory {
    /** What a checkpoint says of itself. */
    public static final String INFO = "checkpoint.json";
    private static final String STAGING_SUFFIX = ".staging";
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Path dir;
    private final String sandbox;
    private final ToLongFunction<Path> sizeOf;

    /**
     * @param dir the directory of the sandbox's checkpoints (made when the first is taken)
     * @param sandbox the sandbox's id, for messages
     * @param sizeOf the bytes a checkpoint's directory holds, as its listing says
     */
    public CheckpointDirectory(Path dir, String sandbox, ToLongFunction<Path> sizeOf) {
        this.dir = dir;
        this.sandbox = sandbox;
        this.sizeOf = sizeOf;
    }

    /** The sum of the sizes of the regular files directly in {@code dir}; 0 if it cannot be read. */
    public static long filesIn(Path dir) {
        try (Stream<Path> files = Files.list(dir)) {
            long size = 0;
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                size += Files.size(file);
            }
            return size;
        } catch (IOException e) {
            return 0;
        }
    }

    /** What a backend saves into a checkpoint's staging directory. */
    @FunctionalInterface
    public interface Save {
        /** Writes the checkpoint into {@code staging}; returns its mode and what its info adds. */
        Saved into(Path staging) throws IOException;
    }

    /** What {@link Save} wrote: the checkpoint's mode and the fields its info adds. */
    public record Saved(String mode, Map<String, ?> extra) {
    }

    /**
     * Takes checkpoint {@code tag}: stages it, has {@code save} write it, publishes it; a failure
     * leaves none (a 500 that says why). 409 if the tag is taken.
     */
    public CheckpointInfo take(String tag, Save save) {
        Path staging = null;
        try {
            staging = stage(tag);
            Saved saved = save.into(staging);
            return publish(tag, staging, saved.mode(), saved.extra());
        } catch (IOException e) {
            if (staging != null) {
                discard(staging);
            }
            throw ApiException.internal("cannot checkpoint sandbox " + sandbox + " as " + tag + ": " + e.getMessage(), e);
        }
    }

    /** A new, empty staging directory for {@code tag} (a leftover one is cleared); 409 if the tag is taken. */
    public Path stage(String tag) throws IOException {
        if (Files.exists(dir.resolve(tag))) {
            throw ApiException.conflict("sandbox " + sandbox + " already has a checkpoint " + tag + "; choose another tag");
        }
        Path staging = dir.resolve("." + tag + STAGING_SUFFIX);
        FileClones.deleteTree(staging);
        return Files.createDirectories(staging);
    }

    /**
     * Writes {@value #INFO} into {@code staging} (taken now, {@code mode}, then {@code extra}) and
     * renames it to {@code tag}; returns what the listing will say of it.
     */
    public CheckpointInfo publish(String tag, Path staging, String mode, Map<String, ?> extra) throws IOException {
        Map<String, Object> info = new LinkedHashMap<>();
        info.put("created", Instant.now().getEpochSecond());
        info.put("mode", mode);
        info.putAll(extra);
        AtomicFiles.write(staging.resolve(INFO), JSON.writeValueAsBytes(info));
        Path target = dir.resolve(tag);
        Files.move(staging, target, StandardCopyOption.ATOMIC_MOVE);
        return info(target);
    }

    /** Removes a staging directory a failed checkpoint left, logging what cannot be removed. */
    public void discard(Path staging) {
        try {
            FileClones.deleteTree(staging);
        } catch (IOException e) {
            System.getLogger(CheckpointDirectory.class.getName()).log(System.Logger.Level.WARNING,
                    "cannot delete " + staging + ": " + e.getMessage());
        }
    }

    /** Checkpoint {@code tag}'s directory; 404 if there is none. */
    public Path existing(String tag) {
        Path checkpoint = dir.resolve(tag);
        if (!Files.isDirectory(checkpoint)) {
            throw ApiException.notFound("sandbox " + sandbox + " has no checkpoint " + tag);
        }
        return checkpoint;
    }

    /** What {@code tag}'s {@value #INFO} says; 409, saying to delete it, if it cannot be read. */
    public JsonNode info(String tag) {
        try {
            return JSON.readTree(existing(tag).resolve(INFO).toFile());
        } catch (IOException e) {
            throw ApiException.conflict("checkpoint " + tag + " of sandbox " + sandbox + " is unreadable (" + e.getMessage()
                    + "): delete it");
        }
    }

    /** Deletes checkpoint {@code tag}; false if there was none. */
    public boolean delete(String tag) {
        Path checkpoint = dir.resolve(tag);
        if (!Files.isDirectory(checkpoint)) {
            return false;
        }
        try {
            FileClones.deleteTree(checkpoint);
        } catch (IOException e) {
            throw ApiException.internal("cannot delete checkpoint " + tag + " of sandbox " + sandbox + ": " + e.getMessage(), e);
        }
        return true;
    }

    /** Every checkpoint, oldest first. */
    public List<CheckpointInfo> list() {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        List<CheckpointInfo> all = new ArrayList<>();
        try (Stream<Path> dirs = Files.list(dir)) {
            for (Path d : dirs.filter(d -> !d.getFileName().toString().startsWith(".")).toList()) {
                all.add(info(d));
            }
        } catch (IOException e) {
            throw ApiException.internal("cannot list the checkpoints of sandbox " + sandbox + ": " + e.getMessage(), e);
        }
        all.sort(Comparator.comparingLong(CheckpointInfo::createdAtUnix).thenComparing(CheckpointInfo::tag));
        return all;
    }

    private CheckpointInfo info(Path checkpoint) throws IOException {
        JsonNode info = JSON.readTree(checkpoint.resolve(INFO).toFile());
        return new CheckpointInfo(checkpoint.getFileName().toString(), info.path("created").asLong(),
                sizeOf.applyAsLong(checkpoint), info.path("mode").asText());
    }
}

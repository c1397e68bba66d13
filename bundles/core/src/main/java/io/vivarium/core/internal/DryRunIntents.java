package io.vivarium.core.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Optional;

import io.vivarium.api.ApiException;
import io.vivarium.common.files.AtomicFiles;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The checkpoint a VM dry-run is using, written atomically beside the sandbox's record before the
 * checkpoint is taken and removed once it is deleted, so that a dry-run cut short by a
 * {@code kill -9} is finished at start-up (restored and deleted) instead of left behind.
 */
final class DryRunIntents {
    static final String FILE = "dry-run-intent.json";
    /** The checkpoint may exist; the VM may hold the command's changes. */
    static final String CHECKPOINTING = "checkpointing";
    /** The VM was restored; only the checkpoint remains to delete. */
    static final String RESTORED = "restored";

    /** One dry-run in progress. */
    record Intent(String tag, String phase, long startedAtUnix) {
        Intent restored() {
            return new Intent(tag, RESTORED, startedAtUnix);
        }
    }

    private final ObjectMapper json = new ObjectMapper().disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

    void write(Path sandboxDir, Intent intent) {
        try {
            AtomicFiles.write(sandboxDir.resolve(FILE), json.writeValueAsBytes(intent));
        } catch (IOException e) {
            throw ApiException.internal("cannot record the dry-run's checkpoint in " + sandboxDir
                    + ", so the dry-run did not start", e);
        }
    }

    Optional<Intent> read(Path sandboxDir) throws IOException {
        try {
            return Optional.of(json.readValue(Files.readAllBytes(sandboxDir.resolve(FILE)), Intent.class));
        } catch (NoSuchFileException e) {
            return Optional.empty();
        }
    }

    void clear(Path sandboxDir) throws IOException {
        AtomicFiles.delete(sandboxDir.resolve(FILE));
    }
}

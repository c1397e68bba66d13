package io.vivarium.core.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

import io.vivarium.api.ApiException;
import io.vivarium.common.files.AtomicFiles;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * A sandbox's baseline: one JSON file beside its record, outside the workspace the sandbox can
 * write, written atomically and removed with the sandbox.
 */
final class BaselineStore {
    static final String FILE = "baseline.json";

    private final ObjectMapper json = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

    void save(Path sandboxDir, FileListing listing) {
        try {
            AtomicFiles.write(sandboxDir.resolve(FILE), json.writeValueAsBytes(listing));
        } catch (IOException e) {
            throw ApiException.internal("cannot store the baseline in " + sandboxDir, e);
        }
    }

    FileListing load(Path sandboxDir, String id) {
        try {
            FileListing listing = json.readValue(Files.readAllBytes(sandboxDir.resolve(FILE)), FileListing.class);
            if (listing.mode() == null || listing.paths() == null || listing.files() == null) {
                throw new IOException("fields are missing");
            }
            return listing;
        } catch (NoSuchFileException e) {
            throw ApiException.notFound("sandbox " + id + " has no baseline yet: POST /v1/sandboxes/" + id
                    + "/baseline first");
        } catch (IOException e) {
            throw ApiException.badRequest("the stored baseline of sandbox " + id + " is corrupt (" + e.getMessage()
                    .lines().findFirst().orElse("") + "); take a new baseline");
        }
    }
}

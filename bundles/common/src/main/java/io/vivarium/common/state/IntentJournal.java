package io.vivarium.common.state;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import io.vivarium.common.files.AtomicFiles;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The intent of a transaction of several writes, made durable before any of them is applied: its
 * presence after a crash means the transaction committed and is replayed; a journal that is not
 * whole (or a temporary file never renamed into place) means it never committed, and nothing of it
 * was applied.
 */
final class IntentJournal {
    static final String FILE = "journal.json";

    /** One write: a record's new envelope, or null to delete the record. */
    record Entry(String collection, String key, JsonNode record) {
        boolean delete() {
            return record == null || record.isNull();
        }
    }

    private final Path file;
    private final RecordCodec codec;

    IntentJournal(Path dir, RecordCodec codec) {
        this.file = dir.resolve(FILE);
        this.codec = codec;
    }

    void write(List<Entry> entries) throws IOException {
        ObjectNode intent = codec.json().createObjectNode();
        intent.put("count", entries.size());
        intent.set("entries", codec.json().valueToTree(entries));
        AtomicFiles.write(file, codec.bytes(intent));
    }

    /**
     * The committed intent, if there is one.
     *
     * @throws IOException if there is a journal but it is not a whole intent
     */
    Optional<List<Entry>> read() throws IOException {
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException none) {
            return Optional.empty();
        }
        JsonNode intent = codec.json().readTree(bytes);
        List<Entry> entries = new ArrayList<>();
        if (intent == null || !intent.path("entries").isArray()) {
            throw new IOException("no entries");
        }
        for (JsonNode e : intent.get("entries")) {
            entries.add(codec.json().treeToValue(e, Entry.class));
        }
        if (entries.size() != intent.path("count").asInt(-1)) {
            throw new IOException(entries.size() + " entries where the intent counts " + intent.path("count"));
        }
        return Optional.of(entries);
    }

    void clear() throws IOException {
        AtomicFiles.delete(file);
    }

    /** Removes temporary files of intents that were never renamed into place. */
    void discardUnfinished() throws IOException {
        try (DirectoryStream<Path> temps = Files.newDirectoryStream(file.getParent(), "." + FILE + ".*.tmp")) {
            for (Path t : temps) {
                Files.deleteIfExists(t);
            }
        }
    }
}

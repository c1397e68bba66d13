package io.vivarium.api.state;

import java.util.Map;
import java.util.function.BiFunction;
import java.util.regex.Pattern;

/**
 * A typed collection of records in a {@link StateStore}.
 *
 * @param name the collection's name, as the store and its journal know it
 * @param type the class of the records' bodies (read and written by Jackson)
 * @param schema the current schema version of a body; records of an older one are upgraded on load
 * @param upgrade turns a body of schema {@code s} (the first argument), as a JSON object of maps, lists and
 *        scalars, into one of {@code s + 1}
 * @param layout where the file implementation keeps a record, relative to the state directory, with
 *        {@code {key}} as one whole path segment (e.g. {@code sandboxes/{key}/sandbox.json});
 *        other implementations ignore it
 */
public record RecordCollection<T>(String name, Class<T> type, int schema,
        BiFunction<Integer, Map<String, Object>, Map<String, Object>> upgrade,
        String layout) {
    /** What a layout holds where the record's key goes. */
    public static final String KEY = "{key}";
    private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9-]{0,63}");
    private static final Pattern VALID_KEY = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,199}");

    public RecordCollection {
        if (!NAME.matcher(name).matches() || schema < 1) {
            throw new IllegalArgumentException("collection " + name + ": a lower-case name and a schema of at least 1");
        }
        int at = layout.indexOf(KEY);
        String after = layout.substring(at + KEY.length());
        if (at < 1 || layout.charAt(at - 1) != '/' || !after.matches("/?[^/{}]+")) {
            throw new IllegalArgumentException("collection " + name + ": layout " + layout
                    + " must hold {key} once as a path segment followed by a file name or suffix");
        }
    }

    /** A collection whose bodies have needed no upgrade since they were first written without an envelope. */
    public static <T> RecordCollection<T> of(String name, Class<T> type, String layout) {
        return new RecordCollection<>(name, type, 1, (from, body) -> body, layout);
    }

    /** Where the file store keeps the record {@code key}, relative to a state directory. */
    public String file(String key) {
        return layout.replace(KEY, checkKey(key));
    }

    /** Whether {@code key} can name a record anywhere (a file name, a database key). */
    public static boolean isKey(String key) {
        return key != null && VALID_KEY.matcher(key).matches();
    }

    public static String checkKey(String key) {
        if (!isKey(key)) {
            throw new IllegalArgumentException("invalid record key " + key);
        }
        return key;
    }
}

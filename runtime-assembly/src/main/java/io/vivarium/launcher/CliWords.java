package io.vivarium.launcher;

import java.util.List;

/**
 * The words of a client command line ({@code vivarium sandbox ...}, {@code vivarium template ...}):
 * its verb, its arguments and its {@code --name VALUE} options, each taken out as it is read.
 */
final class CliWords {

    /** A usage error: exit 2 with the usage. */
    static final class Usage extends Exception {
        private static final long serialVersionUID = 1L;

        Usage(String message) {
            super(message);
        }
    }

    private CliWords() {
    }

    static String verb(List<String> w) throws Usage {
        if (w.isEmpty()) {
            throw new Usage("a command is needed");
        }
        return w.get(0);
    }

    static String arg(List<String> w, int i, String name) throws Usage {
        if (w.size() <= i) {
            throw new Usage(w.get(0) + " needs " + name);
        }
        return w.get(i);
    }

    static List<String> args(List<String> w, int from, String name) throws Usage {
        arg(w, from, name);
        return w.subList(from, w.size());
    }

    /** Removes {@code --name VALUE} from {@code w} and returns VALUE, or null when absent. */
    static String option(List<String> w, String name) throws Usage {
        int i = w.indexOf(name);
        if (i < 0) {
            return null;
        }
        if (i + 1 >= w.size()) {
            throw new Usage(name + " needs a value");
        }
        String value = w.get(i + 1);
        w.remove(i + 1);
        w.remove(i);
        return value;
    }

    static Integer intOption(List<String> w, String name) throws Usage {
        Long v = longOption(w, name);
        if (v != null && (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE)) {
            throw new Usage(name + " is out of range, got " + v);
        }
        return v == null ? null : v.intValue();
    }

    static Long longOption(List<String> w, String name) throws Usage {
        String v = option(w, name);
        try {
            return v == null ? null : Long.valueOf(v);
        } catch (NumberFormatException e) {
            throw new Usage(name + " must be a number, got " + v);
        }
    }
}

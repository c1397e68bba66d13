package io.vivarium.launcher;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;

/** Log lines the launcher writes itself go to stderr, in the same shape as slf4j-simple's. */
final class Console {

    /** slf4j-simple's date format is set to this too (see etc/system.properties). */
    static final String DATE_FORMAT = "yyyy-MM-dd HH:mm:ss.SSS";
    private static final DateTimeFormatter FORMAT = DateTimeFormatter.ofPattern(DATE_FORMAT);

    private Console() {
    }

    static void log(String level, String source, String message, Throwable t) {
        StringBuilder sb = new StringBuilder()
                .append(LocalDateTime.now().format(FORMAT))
                .append(" [").append(Thread.currentThread().getName()).append("] ")
                .append(level).append(' ').append(source).append(" - ").append(message);
        if (t != null) {
            if (t instanceof org.osgi.framework.BundleException) {
                sb.append(": ").append(t.getMessage());
            } else {
                StringWriter w = new StringWriter();
                t.printStackTrace(new PrintWriter(w));
                sb.append(System.lineSeparator()).append(w.toString().stripTrailing());
            }
        }
        synchronized (System.err) {
            System.err.println(sb);
            System.err.flush();
        }
    }

    static void error(String message) {
        synchronized (System.err) {
            System.err.println("vivarium: " + message);
            System.err.flush();
        }
    }
}

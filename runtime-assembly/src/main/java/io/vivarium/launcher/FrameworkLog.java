package io.vivarium.launcher;

import org.apache.felix.framework.Logger;
import org.osgi.framework.Bundle;
import org.osgi.framework.ServiceReference;

/**
 * Felix's own messages (resolution and start failures among them) go to stderr instead of
 * stdout, where the launcher prints only the lines a person or a script reads.
 */
final class FrameworkLog extends Logger {

    @Override
    @SuppressWarnings("rawtypes") // the signature Felix declares
    protected void doLog(Bundle bundle, ServiceReference sr, int level, String msg, Throwable throwable) {
        String lvl = switch (level) {
            case LOG_ERROR -> "ERROR";
            case LOG_WARNING -> "WARN";
            case LOG_INFO -> "INFO";
            default -> "DEBUG";
        };
        String source = bundle == null ? "org.apache.felix.framework" : FrameworkStarter.describe(bundle);
        Console.log(lvl, source, msg, throwable);
    }
}

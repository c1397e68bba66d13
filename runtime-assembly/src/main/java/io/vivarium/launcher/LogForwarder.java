package io.vivarium.launcher;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;

import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.InvalidSyntaxException;
import org.osgi.framework.ServiceEvent;
import org.osgi.framework.ServiceListener;
import org.osgi.framework.ServiceReference;

/**
 * Prints WARN and ERROR entries of the OSGi Log Service on stderr. Declarative Services (SCR)
 * and the HTTP whiteboard report component and servlet failures there, and the Felix Log
 * bundle only keeps entries in memory.
 *
 * <p>The launcher lives outside the framework and does not see the {@code org.osgi.service.log}
 * package of the bundle that exports it, so this works by reflection on that bundle's classes.
 * Framework, bundle and service events ({@code Events.*} loggers) are skipped: the framework's
 * own logger reports those failures already.
 */
final class LogForwarder implements ServiceListener {

    private static final String READER = "org.osgi.service.log.LogReaderService";
    private static final String LISTENER = "org.osgi.service.log.LogListener";
    private static final String ENTRY = "org.osgi.service.log.LogEntry";
    private static final int LOG_WARNING = 2;

    private final BundleContext context;

    private LogForwarder(BundleContext context) {
        this.context = context;
    }

    static void install(BundleContext context) {
        LogForwarder f = new LogForwarder(context);
        try {
            context.addServiceListener(f, "(objectClass=" + READER + ")");
        } catch (InvalidSyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void serviceChanged(ServiceEvent event) {
        if (event.getType() == ServiceEvent.REGISTERED) {
            attach(event.getServiceReference());
        }
    }

    private void attach(ServiceReference<?> ref) {
        Bundle exporter = ref.getBundle();
        if (exporter == null) {
            return;
        }
        try {
            Class<?> readerType = exporter.loadClass(READER);
            Class<?> listenerType = exporter.loadClass(LISTENER);
            Class<?> entryType = exporter.loadClass(ENTRY);
            Method getLevel = entryType.getMethod("getLevel");
            Method getMessage = entryType.getMethod("getMessage");
            Method getException = entryType.getMethod("getException");
            Method getBundle = entryType.getMethod("getBundle");
            Method getLoggerName = method(entryType, "getLoggerName");
            Object reader = context.getService(ref);
            if (reader == null) {
                return;
            }
            InvocationHandler handler = (proxy, m, args) -> {
                switch (m.getName()) {
                    case "logged":
                        if (args != null && args.length == 1) {
                            forward(args[0], getLevel, getMessage, getException, getBundle, getLoggerName);
                        }
                        return null;
                    case "equals":
                        return proxy == args[0];
                    case "hashCode":
                        return System.identityHashCode(proxy);
                    case "toString":
                        return "vivarium-launcher log forwarder";
                    default:
                        return null;
                }
            };
            Object listener = Proxy.newProxyInstance(listenerType.getClassLoader(), new Class<?>[] {listenerType}, handler);
            readerType.getMethod("addLogListener", listenerType).invoke(reader, listener);
        } catch (ReflectiveOperationException | RuntimeException e) {
            Console.log("WARN", "vivarium-launcher", "cannot follow the OSGi log service: " + e, null);
        }
    }

    private static Method method(Class<?> type, String name) {
        try {
            return type.getMethod(name);
        } catch (NoSuchMethodException e) {
            return null; // LogEntry before Log 1.4
        }
    }

    private static void forward(Object entry, Method getLevel, Method getMessage, Method getException,
                                Method getBundle, Method getLoggerName) {
        try {
            int level = (Integer) getLevel.invoke(entry);
            if (level > LOG_WARNING) {
                return;
            }
            String logger = getLoggerName == null ? null : (String) getLoggerName.invoke(entry);
            if (logger != null && logger.startsWith("Events.")) {
                return;
            }
            Bundle bundle = (Bundle) getBundle.invoke(entry);
            String source = bundle != null ? FrameworkStarter.describe(bundle) : (logger != null ? logger : "osgi");
            Console.log(level <= 1 ? "ERROR" : "WARN", source, String.valueOf(getMessage.invoke(entry)),
                    (Throwable) getException.invoke(entry));
        } catch (ReflectiveOperationException | RuntimeException e) {
            // never let logging break the log service's delivery thread
        }
    }
}

package sweeper.yarn;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

/**
 * A real YARN on this machine for tests: one ResourceManager and N NodeManagers (Hadoop's
 * MiniYARNCluster, as Spark's own YARN suite uses), all on 127.0.0.1.
 *
 * <p>Writes {@code yarn-site.xml} and {@code core-site.xml} (fs.defaultFS = file:///) into the
 * conf dir, prints one line {@code READY key=value ...} on stdout, and runs until its stdin
 * closes or it gets SIGTERM; then it stops the cluster (the NodeManagers kill their containers).
 * Hadoop's own logging goes to stderr.
 *
 * <pre>
 * java -cp 'target/lib/sweeper-yarn.jar:target/lib/*' sweeper.yarn.MiniYarn CONF_DIR
 *      [--node-managers 2] [--nm-memory-mb 4096] [--nm-vcores 2] [--min-allocation-mb 128]
 *      [--enforce-memory true] [--timeout-s 120] [--log-retain-s 0]
 * </pre>
 */
public final class MiniYarn {
  private static final String LOCAL_FS_KEY = "fs.AbstractFileSystem.file.impl"; // FileContext's file: scheme

  private MiniYarn() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 1 || args[0].startsWith("-")) {
      System.err.println("usage: MiniYarn CONF_DIR [--node-managers N] [--nm-memory-mb M] [--nm-vcores V] "
          + "[--min-allocation-mb M] [--enforce-memory true|false] [--timeout-s S] [--log-retain-s S]");
      System.exit(2);
    }
    File confDir = new File(args[0]).getAbsoluteFile();
    int nodeManagers = 2;
    int memoryMb = 4096;
    int vcores = 2;
    int minAllocationMb = 128;
    boolean enforceMemory = true;
    int timeoutS = 120;
    long logRetainS = 0;
    for (int i = 1; i + 1 < args.length; i += 2) {
      String value = args[i + 1];
      switch (args[i]) {
        case "--node-managers": nodeManagers = Integer.parseInt(value); break;
        case "--nm-memory-mb": memoryMb = Integer.parseInt(value); break;
        case "--nm-vcores": vcores = Integer.parseInt(value); break;
        case "--min-allocation-mb": minAllocationMb = Integer.parseInt(value); break;
        case "--enforce-memory": enforceMemory = Boolean.parseBoolean(value); break;
        case "--timeout-s": timeoutS = Integer.parseInt(value); break;
        case "--log-retain-s": logRetainS = Long.parseLong(value); break;
        default:
          System.err.println("MiniYarn: unknown option " + args[i]);
          System.exit(2);
      }
    }
    if (!confDir.isDirectory() && !confDir.mkdirs()) {
      throw new IOException("cannot create " + confDir);
    }

    YarnConfiguration conf = new YarnConfiguration();
    conf.set("yarn.resourcemanager.hostname", "127.0.0.1");
    conf.set(YarnConfiguration.RM_WEBAPP_ADDRESS, "127.0.0.1:0");
    // Each NodeManager offers this much; MiniYARNCluster reads the memory from its own key.
    conf.setInt("yarn.minicluster.yarn.nodemanager.resource.memory-mb", memoryMb);
    conf.setInt(YarnConfiguration.NM_PMEM_MB, memoryMb);
    conf.setInt(YarnConfiguration.NM_VCORES, vcores);
    conf.setBoolean("yarn.nodemanager.resource.detect-hardware-capabilities", false);
    // The largest container is one whole NodeManager: a bigger request fails at submit.
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, memoryMb);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_VCORES, vcores);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, minAllocationMb);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_VCORES, 1);
    // A container that outgrows its memory is killed, as on a real cluster (virtual memory is not checked).
    conf.setBoolean("yarn.minicluster.control-resource-monitoring", enforceMemory);
    conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, enforceMemory);
    conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
    conf.setInt("yarn.nodemanager.resource-monitor.interval-ms", 1000);
    conf.setInt("yarn.nodemanager.container-monitor.interval-ms", 1000);
    // A nearly full disk must not make the NodeManagers unhealthy (tests would hang).
    conf.setFloat(YarnConfiguration.NM_MAX_PER_DISK_UTILIZATION_PERCENTAGE, 100.0f);
    // The minicluster jars have no capacity-scheduler.xml: one queue "default" with everything.
    conf.set("yarn.scheduler.capacity.root.queues", "default");
    conf.setInt("yarn.scheduler.capacity.root.default.capacity", 100);
    conf.setFloat("yarn.scheduler.capacity.root.default.user-limit-factor", 1);
    conf.setInt("yarn.scheduler.capacity.root.default.maximum-capacity", 100);
    conf.set("yarn.scheduler.capacity.root.default.state", "RUNNING");
    conf.set("yarn.scheduler.capacity.root.default.acl_submit_applications", "*");
    conf.set("yarn.scheduler.capacity.root.default.acl_administer_queue", "*");
    conf.setInt("yarn.scheduler.capacity.node-locality-delay", -1);
    // Several containers per node heartbeat: spread executors over the NodeManagers.
    conf.setFloat("yarn.scheduler.capacity.maximum-am-resource-percent", 0.5f);
    conf.setBoolean(YarnConfiguration.LOG_AGGREGATION_ENABLED, false);
    conf.setInt(YarnConfiguration.DEBUG_NM_DELETE_DELAY_SEC, 0);
    // A NodeManager that stops waits this long (+1.25 s) for its containers: keep stopping quick.
    conf.setLong(YarnConfiguration.NM_PROCESS_KILL_WAIT_MS, 1000);
    // A NodeManager that stops waits up to 10 s for its pending container-log deletions: delete a
    // finished application's logs at once (--log-retain-s keeps them longer, for debugging).
    conf.setLong(YarnConfiguration.NM_LOG_RETAIN_SECONDS, logRetainS);
    conf.setInt(YarnConfiguration.RM_AM_MAX_ATTEMPTS, 1);
    conf.setLong(YarnConfiguration.RM_NM_HEARTBEAT_INTERVAL_MS, 200);
    conf.set("fs.defaultFS", "file:///");
    // The NodeManagers set the permissions of every file they localize; without Hadoop's native library (jars from
    // Maven Central) each is a chmod process, ~20 s for a packed environment: java.nio's instead (not for clients).
    conf.set(LOCAL_FS_KEY, NioLocalFs.class.getName());

    long started = System.nanoTime();
    MiniYARNCluster cluster = new MiniYARNCluster("sweeper-miniyarn", nodeManagers, 1, 1);
    cluster.init(conf);
    cluster.start();

    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        cluster.stop();
      } finally {
        stopped.countDown();
      }
    }, "miniyarn-stop"));

    Configuration live = cluster.getConfig();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutS);
    // start() may return before the RM has put its real port into the configuration.
    while (live.get(YarnConfiguration.RM_ADDRESS, "").endsWith(":0")) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("ResourceManager address not set within " + timeoutS + " s");
      }
      Thread.sleep(100);
    }
    long left = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
    if (!cluster.waitForNodeManagersToConnect(left)) {
      throw new IllegalStateException(nodeManagers + " NodeManagers did not register within " + timeoutS + " s");
    }

    Configuration clients = new Configuration(live);
    clients.unset(LOCAL_FS_KEY); // a client (Spark's driver) has no sweeper-yarn.jar: Hadoop's own local file system
    writeXml(clients, new File(confDir, "yarn-site.xml"));
    Configuration core = new Configuration(false);
    core.set("fs.defaultFS", "file:///");
    core.set("hadoop.tmp.dir", new File(confDir, "hadoop-tmp").getPath());
    writeXml(core, new File(confDir, "core-site.xml"));

    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
    PrintWriter out = new PrintWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), true);
    out.printf("READY conf_dir=%s rm=%s webapp=%s node_managers=%d nm_memory_mb=%d nm_vcores=%d "
            + "min_allocation_mb=%d enforce_memory=%s start_ms=%d%n",
        confDir, live.get(YarnConfiguration.RM_ADDRESS), live.get(YarnConfiguration.RM_WEBAPP_ADDRESS),
        nodeManagers, memoryMb, vcores, minAllocationMb, enforceMemory, millis);

    // Run until stdin closes (the test process died or closed it) or SIGTERM (shutdown hook).
    Thread stdinWatch = new Thread(() -> {
      try {
        while (System.in.read() != -1) {
          // ignore input
        }
      } catch (IOException ignored) {
        // treat as closed
      }
      System.exit(0);  // runs the shutdown hook
    }, "miniyarn-stdin");
    stdinWatch.setDaemon(true);
    stdinWatch.start();
    stopped.await();
  }

  private static void writeXml(Configuration conf, File file) throws IOException {
    File tmp = new File(file.getPath() + ".tmp");
    try (OutputStream stream = new FileOutputStream(tmp)) {
      conf.writeXml(stream);
    }
    Files.move(tmp.toPath(), file.toPath(), java.nio.file.StandardCopyOption.REPLACE_EXISTING,
        java.nio.file.StandardCopyOption.ATOMIC_MOVE);
  }
}

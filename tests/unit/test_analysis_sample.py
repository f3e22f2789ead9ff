from idsbench.analysis.sample import resources_in_window, stable_after


def test_resources_window_is_time_weighted_and_skips_the_start_row(tmp_path):
    csv = tmp_path / "monitor.csv"
    csv.write_text(
        "t_unix,host_cpu_pct,sensor_cpu_pct,sensor_mem_bytes,sensor_mem_peak_bytes\n"
        "99.0,5,5,10,10\n"
        "100.0,90,80,10,10\n"    # stamped at replay start (rounded up): covers the time before
        "100.5,50,40,20,25\n"    # 0.5 s of replay
        "102.0,30,20,30,30\n"    # 1.5 s of replay
        "103.0,99,99,5,40\n"     # after the window
    )
    r = resources_in_window(csv, 99.9996, 102.0)
    assert r.rows_in_window == 2
    assert r.sensor_cpu_pct == round((40 * 0.5 + 20 * 1.5) / 2.0, 3)
    assert r.host_cpu_pct == round((50 * 0.5 + 30 * 1.5) / 2.0, 3)
    assert r.sensor_rss_peak_bytes == 40  # peak over the whole sample


def test_resources_window_without_rows(tmp_path):
    assert resources_in_window(tmp_path / "missing.csv", 0, 1).sensor_cpu_pct == 0.0


def test_stable_after(tmp_path):
    csv = tmp_path / "counters.csv"
    csv.write_text("t_unix,uptime_s,decoded_pkts\n" + "".join(
        f"{10.0 + i},{i},{d}\n" for i, d in enumerate([0, 50, 100, 100])))
    assert stable_after(csv, 10.5) == 1.5
    assert stable_after(tmp_path / "missing.csv", 0.0) is None


def test_sender_cpu_is_subtracted_from_host_cpu(tmp_path):
    csv = tmp_path / "monitor.csv"
    csv.write_text("t_unix,host_cpu_pct,cpu0_pct,cpu1_pct,sender_cpu_pct\n0,0,0,0,0\n1,60,90,30,90\n2,40,70,10,70\n")
    r = resources_in_window(csv, 0.0, 2.0)
    # the sender used 80% of one core = 40% of the host's two CPUs
    assert (r.host_cpu_pct, r.sender_cpu_pct, r.host_cpus, r.sensor_host_cpu_pct) == (50.0, 80.0, 2, 10.0)


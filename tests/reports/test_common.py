

def test_histogram_bins_by_hand() -> None:
    from runner.reports.common import histogram

    # floor(v * 20): 0.0, 0.04 -> bin 0; 0.05 -> 1; 0.5 -> 10; 0.99 -> 19; 1.0 -> 20, clipped to
    # 19; a negative value -> bin 0 and one above 1 -> bin 19.
    counts = histogram([0.0, 0.04, 0.05, 0.5, 0.99, 1.0, -0.2, 1.3], bins=20)
    assert counts == [3, 1] + [0] * 8 + [1] + [0] * 8 + [3]
    assert histogram([], bins=4) == [0, 0, 0, 0]
    assert all(isinstance(c, int) for c in counts)

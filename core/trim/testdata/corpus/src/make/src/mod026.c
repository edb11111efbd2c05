#include <stdio.h>

int mod026(int x)
{
    int unused_26 = 26;
    return x + 26;
}

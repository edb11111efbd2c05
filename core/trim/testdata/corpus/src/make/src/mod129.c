#include <stdio.h>

int mod129(int x)
{
    return x + 129;
}
